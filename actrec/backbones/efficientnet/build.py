"""keras.applications' EfficientNet (v1), no top: [N, H, W, C] -> [N, feature_width]; and
the rescaling Keras inserts only when it loads ImageNet weights itself
(keras/src/applications/efficientnet.py, keras issue tensorflow#49930), which actrec's
backbone carries so that the published weights see the input scale they were trained on."""

from __future__ import annotations

import math

import keras

from actrec.backbones.graph_edit import producing_layer_name, rebuild_with_input_transform
from actrec.backbones.keras_applications import keras_application
from actrec.backbones.spec import BackboneSpec

IMAGENET_STDDEV_RGB = (0.229, 0.224, 0.225)


def plain_network(
    spec: BackboneSpec, input_shape: tuple[int | None, int | None, int]
) -> keras.Model:
    """Returns keras.applications' EfficientNet `spec`, randomly initialised."""
    return keras_application(spec, input_shape)


def imagenet_ready(model: keras.Model) -> keras.Model:
    """Returns EfficientNet (v1) `model` with the rescaling Keras inserts after its input
    Normalization layer when it loads ImageNet weights itself: x / sqrt(stddev) per channel.

    With C != 3 input channels (flow), the three factors are averaged into one.
    """
    normalization_names = [
        layer.name for layer in model.layers if isinstance(layer, keras.layers.Normalization)
    ]
    if not normalization_names:
        return model
    normalization_name = normalization_names[0]
    factors = [1.0 / math.sqrt(stddev) for stddev in IMAGENET_STDDEV_RGB]

    def rescale_after_normalization(layer, inputs):
        if producing_layer_name(inputs) != normalization_name:
            return inputs
        channels = inputs.shape[-1]
        scale = factors if channels == 3 else sum(factors) / len(factors)
        return keras.layers.Rescaling(scale, name="imagenet_stddev_rescaling")(inputs)

    return rebuild_with_input_transform(model, rescale_after_normalization)
