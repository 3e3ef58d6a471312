"""keras.applications' EfficientNet (v1) in the registry (keras/src/applications/
efficientnet.py's no-top files and MD5s). Standard library only."""

from __future__ import annotations

from actrec.backbones.spec import BackboneFamily, BackboneSpec, WeightsFile

EFFICIENTNET_URL = "https://storage.googleapis.com/keras-applications/"


def _efficientnet(variant: str, input_size: int, width: int, md5: str) -> BackboneSpec:
    file_name = f"efficientnet{variant}_notop.h5"
    return BackboneSpec(
        name=f"efficientnet_{variant}",
        family="efficientnet",
        constructor=f"EfficientNet{variant.upper()}",
        default_input_size=input_size,
        preprocessing="none",
        feature_width=width,
        weights=WeightsFile(file_name, f"{EFFICIENTNET_URL}{file_name}", "md5", md5),
    )


FAMILY = BackboneFamily(
    name="efficientnet",
    position=5,
    specs=(
        _efficientnet("b0", 224, 1280, "50bc09e76180e00e4465e1a485ddc09d"),
        _efficientnet("b1", 240, 1280, "74c4e6b3e1f6a1eea24c589628592432"),
        _efficientnet("b2", 260, 1408, "111f8e2ac8aa800a7a99e3239f7bfb39"),
        _efficientnet("b3", 300, 1536, "af6d107764bb5b1abb91932881670226"),
    ),
)
