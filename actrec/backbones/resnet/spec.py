"""keras.applications' ResNet v1 in the registry: Keras's no-top files and their MD5s
(keras/src/applications/resnet.py). Standard library only."""

from __future__ import annotations

from actrec.backbones.resnet.shift import RESNET_SHIFT
from actrec.backbones.spec import KERAS_APPLICATIONS_URL, BackboneFamily, BackboneSpec, WeightsFile


def _resnet(name: str, constructor: str, md5: str) -> BackboneSpec:
    file_name = f"{name}_weights_tf_dim_ordering_tf_kernels_notop.h5"
    return BackboneSpec(
        name=name,
        family="resnet",
        constructor=constructor,
        default_input_size=224,
        preprocessing="caffe",
        feature_width=2048,
        weights=WeightsFile(file_name, f"{KERAS_APPLICATIONS_URL}resnet/{file_name}", "md5", md5),
        shift_family=RESNET_SHIFT.name,
    )


FAMILY = BackboneFamily(
    name="resnet",
    position=1,
    specs=(
        _resnet("resnet50", "ResNet50", "4d473c1dd8becc155b73f8504c6f6626"),
        _resnet("resnet101", "ResNet101", "88cf7a10940856eca736dc7b7e228a21"),
        _resnet("resnet152", "ResNet152", "ee4c566cf9a93f14d82f913c2dc6dd0c"),
    ),
    shift=RESNET_SHIFT,
)
