"""keras.applications' EfficientNetV2 in the registry (keras/src/applications/
efficientnet_v2.py's no-top files and MD5s). Standard library only."""

from __future__ import annotations

from actrec.backbones.spec import KERAS_APPLICATIONS_URL, BackboneFamily, BackboneSpec, WeightsFile


def _efficientnet_v2(variant: str, input_size: int, width: int, md5: str) -> BackboneSpec:
    file_name = f"efficientnetv2-{variant}_notop.h5"
    return BackboneSpec(
        name=f"efficientnetv2_{variant}",
        family="efficientnetv2",
        constructor=f"EfficientNetV2{variant.upper()}",
        default_input_size=input_size,
        preprocessing="none",
        feature_width=width,
        weights=WeightsFile(
            file_name, f"{KERAS_APPLICATIONS_URL}efficientnet_v2/{file_name}", "md5", md5
        ),
        constructor_arguments={"include_preprocessing": True},
    )


FAMILY = BackboneFamily(
    name="efficientnetv2",
    position=6,
    specs=(
        _efficientnet_v2("b0", 224, 1280, "893217f2bb855e2983157299931e43ff"),
        _efficientnet_v2("b1", 240, 1280, "0e80663031ca32d657f9caa404b6ec37"),
        _efficientnet_v2("b2", 260, 1408, "1dfe2e7a5d45b6632553a8961ea609eb"),
        _efficientnet_v2("b3", 300, 1536, "f6abf7b5849ac99a89b50dd3fd532856"),
        _efficientnet_v2("s", 384, 1280, "af0682fb74e8c54910f2d4393339c070"),
    ),
)
