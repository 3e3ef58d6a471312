"""keras.applications' MobileNetV3 (Small, Large), no top: [N, H, W, C] -> [N, feature_width]."""

from __future__ import annotations

import keras

from actrec.backbones.keras_applications import keras_application
from actrec.backbones.spec import BackboneSpec


def plain_network(
    spec: BackboneSpec, input_shape: tuple[int | None, int | None, int]
) -> keras.Model:
    """Returns keras.applications' network `spec`, randomly initialised (keras_application)."""
    return keras_application(spec, input_shape)
