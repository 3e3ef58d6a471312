"""Keras's own hard swish layers (keras.applications' MobileNetV3) in an int8 TFLite model:
traced as relu6(x + 3) * x / 6 (actrec.backbones.keras_hard_swish), ops LiteRT's XNNPACK
runs in int8, instead of TFLite's fused HARD_SWISH, which it does not; float32 keeps the
fused op (its fastest), and the layers are Keras's own again after the conversion."""

from __future__ import annotations

import collections

import keras
import numpy as np
import tensorflow as tf

from actrec.backbones.keras_hard_swish import int8_hard_swish
from actrec.config.recipe import DataConfig, ModelConfig
from actrec.export.tflite_flatbuffers import converted
from actrec.models.factory import build_model

SIZE = 64


def _op_counts(flatbuffer: bytes) -> collections.Counter:
    from tensorflow.lite.tools import flatbuffer_utils

    model = flatbuffer_utils.convert_bytearray_to_object(bytearray(flatbuffer))
    return collections.Counter(
        flatbuffer_utils.opcode_to_name(model, op.opcodeIndex)
        for graph in model.subgraphs
        for op in graph.operators
    )


def _hard_swish_layers(model) -> list:
    return [
        layer
        for layer in model._flatten_layers(include_self=False, recursive=True)
        if isinstance(layer, keras.layers.Activation)
        and layer.activation is keras.activations.hard_silu
    ]


def test_the_separate_form_is_keras_hard_swish():
    layer = keras.layers.Activation("hard_swish")
    model = keras.Sequential([keras.Input((9,)), layer])
    x = np.linspace(-8, 8, 9 * 11, dtype="float32").reshape(11, 9)
    expected = np.asarray(model(x))
    with int8_hard_swish([model]) as swapped:
        assert swapped == 1 and layer.activation is not keras.activations.hard_silu
        np.testing.assert_allclose(np.asarray(model(x)), expected, atol=1e-6)
    assert layer.activation is keras.activations.hard_silu


def test_an_int8_mobilenet_v3_has_no_hard_swish_op_and_its_layers_stay_keras_own():
    model = build_model(
        ModelConfig(architecture="tsn", backbone="mobilenet_v3_small", weights="none"),
        DataConfig(num_segments=1, crop_size=SIZE),
        5,
    )
    layers = _hard_swish_layers(model)
    assert len(layers) == 18  # MobileNetV3-Small's without its top
    signature = [tf.TensorSpec((1, 1, SIZE, SIZE, 3), tf.float32, "clips")]
    clips = np.random.default_rng(0).uniform(0, 255, (4, 1, 1, SIZE, SIZE, 3)).astype("float32")

    def function(batch):
        return {"logits": model(batch, training=False)}

    float32 = converted(function, signature, [model], "none")
    int8 = converted(
        function, signature, [model], "int8", representative=lambda: ([clip] for clip in clips)
    )
    assert _op_counts(float32)["HARD_SWISH"] == 18  # the fused op: float32's fastest
    counts = _op_counts(int8)
    assert counts["HARD_SWISH"] == 0 and counts["ADD"] >= 18, counts
    assert _hard_swish_layers(model) == layers  # Keras's own again after the conversion
