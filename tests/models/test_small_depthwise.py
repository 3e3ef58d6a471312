"""SmallInputDepthwiseConv2D computes what Keras' DepthwiseConv2D computes (output and
gradients), with its own filter gradient only in training on inputs smaller than the kernel."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from actrec.models.backbones import build_backbone, build_plain_backbone
from actrec.models.initialisation import copy_backbone_weights
from actrec.models.small_depthwise import SmallInputDepthwiseConv2D

BACKPROP_FILTER = "DepthwiseConv2dNativeBackpropFilter"


def _pair(input_shape, **config):
    """(Keras' layer, actrec's): the same config, built, with the same random weights."""
    layers = keras.layers.DepthwiseConv2D(**config), SmallInputDepthwiseConv2D(**config)
    layers[0].build(input_shape)
    layers[1].build(input_shape)
    random = np.random.default_rng(0)
    values = [random.normal(size=w.shape).astype("float32") for w in layers[0].weights]
    for layer in layers:
        layer.set_weights(values)
    return layers


def _trained_once(layer, x, upstream):
    """(output, [d x, d weight...]) of one training call."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x, training=True)
        loss = tf.reduce_sum(tf.cast(y, "float32") * upstream)
    gradients = tape.gradient(loss, [x, *(w.value for w in layer.trainable_weights)])
    return np.asarray(y, "float32"), [np.asarray(g, "float32") for g in gradients]


@pytest.mark.parametrize(
    ("input_shape", "config"),
    [
        ((4, 2, 2, 24), {"kernel_size": 3, "padding": "same", "use_bias": False}),
        ((3, 1, 1, 16), {"kernel_size": 3, "padding": "same", "activation": "relu"}),
        ((2, 2, 6, 8), {"kernel_size": 5, "padding": "same"}),
        ((2, 3, 1, 8), {"kernel_size": (3, 3), "padding": "same", "use_bias": False}),
    ],
)
def test_training_on_inputs_smaller_than_the_kernel_gives_keras_output_and_gradients(
    input_shape, config
):
    keras_layer, layer = _pair(input_shape, **config)
    x = tf.random.stateless_normal(input_shape, seed=(1, 2))
    upstream = tf.random.stateless_normal(keras_layer.compute_output_shape(input_shape), (3, 4))
    expected, got = _trained_once(keras_layer, x, upstream), _trained_once(layer, x, upstream)
    np.testing.assert_allclose(got[0], expected[0], atol=1e-5)
    assert len(got[1]) == len(expected[1])
    for got_gradient, expected_gradient in zip(got[1], expected[1], strict=True):
        np.testing.assert_allclose(got_gradient, expected_gradient, rtol=1e-4, atol=1e-4)


def test_mixed_precision_gives_float16_output_and_the_float32_kernel_s_gradient():
    policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_float16")
    try:
        keras_layer, layer = _pair((4, 2, 2, 16), kernel_size=3, padding="same")
        x = tf.cast(tf.random.stateless_normal((4, 2, 2, 16), seed=(5, 6)), "float16")
        upstream = tf.random.stateless_normal((4, 2, 2, 16), seed=(7, 8))
        expected, got = _trained_once(keras_layer, x, upstream), _trained_once(layer, x, upstream)
        assert layer(x, training=True).dtype == "float16" and layer.kernel.dtype == "float32"
    finally:
        keras.config.set_dtype_policy(policy)
    np.testing.assert_allclose(got[0], expected[0], atol=1e-2)
    for got_gradient, expected_gradient in zip(got[1], expected[1], strict=True):
        np.testing.assert_allclose(got_gradient, expected_gradient, rtol=1e-2, atol=1e-2)


def _gradient_op_types(layer, x, training: bool) -> set[str]:
    def loss_gradient(value):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(layer(value, training=training))
        return tape.gradient(loss, layer.trainable_weights[0].value)

    graph = tf.function(loss_gradient).get_concrete_function(x).graph
    return {op.type for op in graph.get_operations()}


def test_tensorflow_s_filter_gradient_runs_everywhere_but_training_on_small_inputs():
    small = tf.zeros((2, 2, 2, 8))
    _, layer = _pair((2, 2, 2, 8), kernel_size=3, padding="same")
    assert BACKPROP_FILTER not in _gradient_op_types(layer, small, training=True)
    assert BACKPROP_FILTER in _gradient_op_types(layer, small, training=False)
    # a 3x3 input, a stride of 2 or a frozen layer: TensorFlow's kernel
    large = tf.zeros((2, 3, 3, 8))
    _, on_large = _pair((2, 3, 3, 8), kernel_size=3, padding="same")
    assert BACKPROP_FILTER in _gradient_op_types(on_large, large, training=True)
    _, strided = _pair((2, 2, 2, 8), kernel_size=3, strides=2, padding="same")
    assert BACKPROP_FILTER in _gradient_op_types(strided, small, training=True)


def test_actrec_backbones_swap_depthwise_layers_and_take_plain_keras_weights():
    plain = build_plain_backbone("test_mobilenet_v2", (32, 32, 3))
    network = build_backbone("test_mobilenet_v2", (32, 32, 3))
    assert [w.path for w in network.weights] == [w.path for w in plain.weights]
    depthwise = [
        layer for layer in network.layers if isinstance(layer, keras.layers.DepthwiseConv2D)
    ]
    assert depthwise and all(type(layer) is SmallInputDepthwiseConv2D for layer in depthwise)
    restored = keras.layers.deserialize(keras.layers.serialize(depthwise[0]))
    assert type(restored) is SmallInputDepthwiseConv2D
    # weights of Keras' own network (an ImageNet file's) copy in, layer by layer
    copy_backbone_weights(plain, network)
    for got, expected in zip(network.weights, plain.weights, strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))
