"""keras.applications' MobileNetV3 in the registry (keras/src/applications/mobilenet_v3.py's
no-top files and MD5s). Standard library only."""

from __future__ import annotations

from actrec.backbones.spec import KERAS_APPLICATIONS_URL, BackboneFamily, BackboneSpec, WeightsFile


def _mobilenet_v3(size: str, width: int, md5: str) -> BackboneSpec:
    file_name = f"weights_mobilenet_v3_{size}_224_1.0_float_no_top_v2.h5"
    return BackboneSpec(
        name=f"mobilenet_v3_{size}",
        family="mobilenet_v3",
        constructor=f"MobileNetV3{size.capitalize()}",
        default_input_size=224,
        preprocessing="none",
        feature_width=width,
        weights=WeightsFile(
            file_name, f"{KERAS_APPLICATIONS_URL}mobilenet_v3/{file_name}", "md5", md5
        ),
        constructor_arguments={"include_preprocessing": True},
    )


FAMILY = BackboneFamily(
    name="mobilenet_v3",
    position=4,
    specs=(
        _mobilenet_v3("small", 576, "d3e8ec802a04aa4fc771ee12a9a9b836"),
        _mobilenet_v3("large", 960, "07fb09a5933dd0c8eaafa16978110389"),
    ),
)
