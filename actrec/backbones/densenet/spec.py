"""keras.applications' DenseNet-121 in the registry (keras/src/applications/densenet.py's
no-top file and MD5). Standard library only."""

from __future__ import annotations

from actrec.backbones.spec import KERAS_APPLICATIONS_URL, BackboneFamily, BackboneSpec, WeightsFile

_FILE = "densenet121_weights_tf_dim_ordering_tf_kernels_notop.h5"

FAMILY = BackboneFamily(
    name="densenet",
    position=7,
    specs=(
        BackboneSpec(
            name="densenet121",
            family="densenet",
            constructor="DenseNet121",
            default_input_size=224,
            preprocessing="torch",
            feature_width=1024,
            weights=WeightsFile(
                _FILE,
                f"{KERAS_APPLICATIONS_URL}densenet/{_FILE}",
                "md5",
                "30ee3e1110167f948a6b9946edeeb738",
            ),
        ),
    ),
)
