"""FusedBatchNormalization trains with TensorFlow's fused kernel and computes what Keras'
BatchNormalization computes: output, gradients and moving statistics."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from actrec.backbones.build import build_backbone, build_plain_backbone
from actrec.backbones.fused_batch_norm import FusedBatchNormalization
from actrec.backbones.registry import backbone_spec


def _pair(input_shape, **config):
    """(Keras' layer, the fused one): the same config, built, with the same random scale,
    offset and moving statistics."""
    layers = keras.layers.BatchNormalization(**config), FusedBatchNormalization(**config)
    random = np.random.default_rng(0)
    channels = input_shape[-1]
    values = [
        random.normal(size=channels),
        random.normal(size=channels),
        random.normal(size=channels),
        random.uniform(0.5, 2.0, size=channels),
    ]
    for layer in layers:
        layer.build(input_shape)
        layer.set_weights([value.astype("float32") for value in values])
    return layers


def _trained_once(layer, x, upstream):
    """(output, [d x, d gamma, d beta], moving mean, moving variance) of one training call."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x, training=True)
        loss = tf.reduce_sum(tf.cast(y, "float32") * upstream)
    gradients = tape.gradient(loss, [x, layer.gamma.value, layer.beta.value])
    return (
        np.asarray(y, "float32"),
        [np.asarray(g, "float32") for g in gradients],
        np.asarray(layer.moving_mean),
        np.asarray(layer.moving_variance),
    )


@pytest.mark.parametrize(
    ("input_shape", "momentum", "epsilon"),
    [((6, 5, 7, 8), 0.9, 1e-3), ((4, 3, 3, 16), 0.0, 1.001e-5), ((1, 1, 1, 4), 0.99, 1e-3)],
)
def test_training_gives_keras_output_gradients_and_moving_statistics(
    input_shape, momentum, epsilon
):
    keras_layer, fused_layer = _pair(input_shape, momentum=momentum, epsilon=epsilon)
    x = tf.random.stateless_normal(input_shape, seed=(1, 2)) * 3.0 + 1.0
    upstream = tf.random.stateless_normal(input_shape, seed=(3, 4))
    expected, got = _trained_once(keras_layer, x, upstream), _trained_once(fused_layer, x, upstream)
    np.testing.assert_allclose(got[0], expected[0], atol=1e-5)
    for got_gradient, expected_gradient in zip(got[1], expected[1], strict=True):
        np.testing.assert_allclose(got_gradient, expected_gradient, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[2], expected[2], atol=1e-6)  # moving mean
    # moving variance: the biased batch variance, as Keras (0 for one value per channel)
    np.testing.assert_allclose(got[3], expected[3], rtol=1e-5, atol=1e-6)


def test_mixed_precision_keeps_keras_float32_statistics_and_float16_output():
    policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_float16")
    try:
        keras_layer, fused_layer = _pair((4, 5, 5, 8))
        x = tf.cast(tf.random.stateless_normal((4, 5, 5, 8), seed=(5, 6)) * 4.0, "float16")
        upstream = tf.random.stateless_normal((4, 5, 5, 8), seed=(7, 8))
        expected = _trained_once(keras_layer, x, upstream)
        got = _trained_once(fused_layer, x, upstream)
        assert fused_layer(x, training=True).dtype == "float16"
        assert fused_layer.moving_variance.dtype == "float32"
    finally:
        keras.config.set_dtype_policy(policy)
    np.testing.assert_allclose(got[0], expected[0], atol=2e-3)
    np.testing.assert_allclose(got[3], expected[3], rtol=1e-5, atol=1e-6)


def _op_types(layer, x, training: bool) -> set[str]:
    function = tf.function(lambda value: layer(value, training=training))
    return {op.type for op in function.get_concrete_function(x).graph.get_operations()}


def test_the_fused_kernel_runs_in_training_only_and_keras_ops_everywhere_else():
    image = tf.zeros((2, 4, 4, 8))
    _, fused_layer = _pair((2, 4, 4, 8))
    training = _op_types(fused_layer, image, training=True)
    assert "FusedBatchNormV3" in training and "SquaredDifference" not in training
    assert "FusedBatchNormV3" not in _op_types(fused_layer, image, training=False)
    # what the kernel does not take: features of rank 2, a smaller epsilon than cuDNN's
    # minimum, a frozen layer
    _, features_layer = _pair((2, 8))
    assert "FusedBatchNormV3" not in _op_types(features_layer, tf.zeros((2, 8)), True)
    _, small_epsilon = _pair((2, 4, 4, 8), epsilon=1e-6)
    assert "FusedBatchNormV3" not in _op_types(small_epsilon, image, training=True)
    _, frozen = _pair((2, 4, 4, 8))
    frozen.trainable = False
    assert "FusedBatchNormV3" not in _op_types(frozen, image, training=True)


def test_actrec_backbones_are_keras_networks_with_fused_batch_normalization():
    plain = build_plain_backbone(backbone_spec("test_mobilenet_v2"), (32, 32, 3))
    network = build_backbone(backbone_spec("test_mobilenet_v2"), (32, 32, 3))
    assert network.name == plain.name
    assert [layer.name for layer in network.layers] == [layer.name for layer in plain.layers]
    assert [w.path for w in network.weights] == [w.path for w in plain.weights]
    normalizations = [
        layer for layer in network.layers if isinstance(layer, keras.layers.BatchNormalization)
    ]
    assert normalizations and all(
        type(layer) is FusedBatchNormalization for layer in normalizations
    )
    restored = keras.layers.deserialize(keras.layers.serialize(normalizations[0]))
    assert type(restored) is FusedBatchNormalization
    assert restored.get_config() == normalizations[0].get_config()
