"""MobileNetV2 in its two layouts: keras.applications' (`mobilenet_v2`) and TSM's
(mit-han-lab/temporal-shift-module archs/mobilenet_v2.py, also the online demo's:
`mobilenet_v2_tsm`, and the test network `test_mobilenet_v2`, four of its blocks, no
weights): ReLU6, epsilon 1e-5, every 3x3 depthwise convolution padded by 1 on every side,
keras.applications' layer names (actrec.backbones.torch_layers). [N, H, W, C] -> [N, F].
"""

from __future__ import annotations

import keras

from actrec.backbones.keras_applications import keras_application
from actrec.backbones.spec import BackboneSpec
from actrec.backbones.torch_layers import batch_norm, check_arguments, convolution

MOBILENET_V2_SETTINGS = (
    # expansion t, output channels c, blocks n, first stride s (archs/mobilenet_v2.py)
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)
MOBILENET_V2_STEM_WIDTH = 32
MOBILENET_V2_LAST_WIDTH = 1280


def _inverted_residual(x, output_channels: int, stride: int, expansion: int, name: str):
    """TSM's InvertedResidual: [N, H, W, C] -> [N, H/stride, W/stride, output_channels];
    `name` is keras.applications' ("expanded_conv" for the first block, else "block_M")."""
    input_channels = x.shape[-1]
    hidden = input_channels * expansion
    y = x
    if expansion != 1:
        y = convolution(hidden, 1, 1, f"{name}_expand")(y)
        y = batch_norm(f"{name}_expand_BN")(y)
        y = keras.layers.ReLU(6.0, name=f"{name}_expand_relu")(y)
    y = keras.layers.ZeroPadding2D(1, name=f"{name}_pad")(y)
    y = keras.layers.DepthwiseConv2D(3, strides=stride, use_bias=False, name=f"{name}_depthwise")(y)
    y = batch_norm(f"{name}_depthwise_BN")(y)
    y = keras.layers.ReLU(6.0, name=f"{name}_depthwise_relu")(y)
    y = convolution(output_channels, 1, 1, f"{name}_project")(y)
    y = batch_norm(f"{name}_project_BN")(y)
    if stride == 1 and input_channels == output_channels:
        y = keras.layers.Add(name=f"{name}_add")([x, y])
    return y


def _mobilenet_v2(
    name: str,
    settings: tuple[tuple[int, int, int, int], ...],
    stem_width: int,
    last_width: int,
    input_shape: tuple[int | None, int | None, int],
) -> keras.Model:
    """A MobileNetV2 of TSM's layout: [N, H, W, C] -> [N, last_width].

    settings: (expansion, output channels, blocks, first stride) per stage. Its stem is
    Keras's `Conv1` / `bn_Conv1`; its first block `expanded_conv`, the M-th after it
    `block_M`; its head `Conv_1` / `Conv_1_bn`.
    """
    inputs = keras.Input(tuple(input_shape), name="input_layer")
    x = keras.layers.ZeroPadding2D(1, name="Conv1_pad")(inputs)
    x = convolution(stem_width, 3, 2, "Conv1")(x)
    x = batch_norm("bn_Conv1")(x)
    x = keras.layers.ReLU(6.0, name="Conv1_relu")(x)
    index = 0
    for expansion, channels, blocks, first_stride in settings:
        for block in range(blocks):
            block_name = "expanded_conv" if index == 0 else f"block_{index}"
            stride = first_stride if block == 0 else 1
            x = _inverted_residual(x, channels, stride, expansion, block_name)
            index += 1
    x = convolution(last_width, 1, 1, "Conv_1")(x)
    x = batch_norm("Conv_1_bn")(x)
    x = keras.layers.ReLU(6.0, name="out_relu")(x)
    x = keras.layers.GlobalAveragePooling2D(name="avg_pool")(x)
    return keras.Model(inputs, x, name=name)


def mobilenet_v2_tsm(
    include_top: bool = False,
    weights=None,
    input_shape: tuple[int | None, int | None, int] = (224, 224, 3),
    pooling: str = "avg",
) -> keras.Model:
    """TSM's MobileNetV2 (width 1) without its classifier: [N, H, W, C] -> [N, 1280].

    Its `features.0` is Keras's `Conv1` / `bn_Conv1`; `features.1` is `expanded_conv`;
    `features.M` (M >= 2) is `block_{M-1}`; `features.18` is `Conv_1` / `Conv_1_bn`.
    """
    check_arguments("mobilenet_v2_tsm", include_top, weights, pooling)
    return _mobilenet_v2(
        "mobilenet_v2_tsm",
        MOBILENET_V2_SETTINGS,
        MOBILENET_V2_STEM_WIDTH,
        MOBILENET_V2_LAST_WIDTH,
        input_shape,
    )


TEST_MOBILENET_V2_SETTINGS = ((1, 8, 1, 1), (2, 16, 3, 2))
"""The test network's stages: `expanded_conv`, then `block_1` (stride 2) and two residual
blocks, `block_2` and `block_3`, which TSM shifts (as timm's `test_*` models: a network for
tests and smoke runs, not for accuracy)."""


def test_mobilenet_v2(
    include_top: bool = False,
    weights=None,
    input_shape: tuple[int | None, int | None, int] = (32, 32, 3),
    pooling: str = "avg",
) -> keras.Model:
    """A four-block MobileNetV2 with random weights only: [N, H, W, C] -> [N, 64]."""
    check_arguments(
        "test_mobilenet_v2", include_top, weights, pooling, "a test network has no weights"
    )
    return _mobilenet_v2("test_mobilenet_v2", TEST_MOBILENET_V2_SETTINGS, 16, 64, input_shape)


def plain_network(
    spec: BackboneSpec, input_shape: tuple[int | None, int | None, int]
) -> keras.Model:
    """Returns the MobileNetV2 `spec`, randomly initialised: keras.applications' for layout
    "keras", else TSM's layout (its `constructor` here)."""
    if spec.layout == "keras":
        return keras_application(spec, input_shape)
    constructors = {"mobilenet_v2_tsm": mobilenet_v2_tsm, "test_mobilenet_v2": test_mobilenet_v2}
    return constructors[spec.constructor](input_shape=tuple(input_shape))
