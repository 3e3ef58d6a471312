"""Backbones with PyTorch's layout: torchvision's ResNet and the MobileNetV2 of TSM's code,
built in Keras so that a PyTorch state dict maps onto them one tensor to one weight; and the
test network `test_mobilenet_v2` (four of that MobileNetV2's blocks, no weights).

keras.applications' networks cannot load a published PyTorch file: its ResNet puts a stage's
stride 2 on the first 1x1 convolution (torchvision: on the 3x3), gives its convolutions
biases and uses BatchNorm epsilon 1.001e-5; its MobileNetV2 pads a stride-2 convolution on
one side ("same"), where PyTorch pads 1 pixel on every side, and uses epsilon 1e-3. These
networks follow the PyTorch modules exactly:

- torchvision ResNet (torchvision/models/resnet.py, "V1.5"): convolutions without bias,
  BatchNorm epsilon 1e-5, the stride on the bottleneck's 3x3 convolution, explicit
  symmetric zero padding (the 3x3 max pool's zero padding equals PyTorch's -inf padding: it
  follows a ReLU);
- TSM's MobileNetV2 (mit-han-lab/temporal-shift-module archs/mobilenet_v2.py): ReLU6,
  epsilon 1e-5, every 3x3 depthwise convolution padded by 1 on every side.

Layer names are keras.applications' own (`convK_blockM_1_conv`, `convK_blockM_add`,
`block_M_expand`, `block_M_add`, ...), so that the temporal shift insertion, partial BN,
learning-rate groups, rematerialisation and the streaming export find the same layers as in
the keras.applications networks. PyTorch's BatchNorm momentum 0.1 is Keras's 0.9.

Each builder takes keras.applications' arguments (include_top=False, weights=None,
input_shape, pooling="avg") and returns [N, H, W, C] -> [N, F] pooled features.
"""

from __future__ import annotations

import keras

from actrec.errors import ConfigError

BATCH_NORM_EPSILON = 1e-5
BATCH_NORM_MOMENTUM = 0.9  # PyTorch's momentum 0.1 (Keras keeps 1 - momentum of the new value)

RESNET_STAGE_BLOCKS = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3)}
RESNET_STAGE_WIDTHS = (64, 128, 256, 512)
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


def _check_arguments(
    name: str,
    include_top: bool,
    weights,
    pooling: str,
    weights_source: str = "its weights come from a converted PyTorch file "
    "(`actrec pretrained convert`)",
) -> None:
    if include_top or weights is not None or pooling != "avg":
        raise ConfigError(
            f"{name} is built without its classifier, randomly initialised and average-pooled "
            f"(include_top=False, weights=None, pooling='avg'); {weights_source}"
        )


def _batch_norm(name: str) -> keras.layers.BatchNormalization:
    return keras.layers.BatchNormalization(
        epsilon=BATCH_NORM_EPSILON, momentum=BATCH_NORM_MOMENTUM, name=name
    )


def _convolution(filters: int, kernel: int, stride: int, name: str) -> keras.layers.Conv2D:
    return keras.layers.Conv2D(filters, kernel, strides=stride, use_bias=False, name=name)


def _bottleneck(x, width: int, stride: int, projection: bool, name: str):
    """torchvision's Bottleneck: [N, H, W, C] -> [N, H/stride, W/stride, 4 * width]."""
    if projection:
        shortcut = _convolution(4 * width, 1, stride, f"{name}_0_conv")(x)
        shortcut = _batch_norm(f"{name}_0_bn")(shortcut)
    else:
        shortcut = x
    y = _convolution(width, 1, 1, f"{name}_1_conv")(x)
    y = _batch_norm(f"{name}_1_bn")(y)
    y = keras.layers.ReLU(name=f"{name}_1_relu")(y)
    y = keras.layers.ZeroPadding2D(1, name=f"{name}_2_pad")(y)
    y = _convolution(width, 3, stride, f"{name}_2_conv")(y)
    y = _batch_norm(f"{name}_2_bn")(y)
    y = keras.layers.ReLU(name=f"{name}_2_relu")(y)
    y = _convolution(4 * width, 1, 1, f"{name}_3_conv")(y)
    y = _batch_norm(f"{name}_3_bn")(y)
    y = keras.layers.Add(name=f"{name}_add")([shortcut, y])
    return keras.layers.ReLU(name=f"{name}_out")(y)


def torchvision_resnet(
    depth: int,
    include_top: bool = False,
    weights=None,
    input_shape: tuple[int | None, int | None, int] = (224, 224, 3),
    pooling: str = "avg",
) -> keras.Model:
    """torchvision's ResNet-`depth` (50 or 101) without its `fc`: [N, H, W, C] -> [N, 2048].

    Stage K of Keras's names (conv2..conv5) is torchvision's `layer{K-1}`; block M is
    `layer{K-1}.{M-1}`; `_0_` is its `downsample`, `_1_`..`_3_` its conv1..conv3 / bn1..bn3.
    """
    _check_arguments(f"resnet{depth}_torchvision", include_top, weights, pooling)
    if depth not in RESNET_STAGE_BLOCKS:
        raise ConfigError(f"torchvision ResNet depth {depth} is not built; use 50 or 101")
    inputs = keras.Input(tuple(input_shape), name="input_layer")
    x = keras.layers.ZeroPadding2D(3, name="conv1_pad")(inputs)
    x = _convolution(64, 7, 2, "conv1_conv")(x)
    x = _batch_norm("conv1_bn")(x)
    x = keras.layers.ReLU(name="conv1_relu")(x)
    x = keras.layers.ZeroPadding2D(1, name="pool1_pad")(x)
    x = keras.layers.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    stages = zip(RESNET_STAGE_WIDTHS, RESNET_STAGE_BLOCKS[depth], strict=True)
    for stage, (width, blocks) in enumerate(stages, start=2):
        for block in range(1, blocks + 1):
            stride = 2 if block == 1 and stage > 2 else 1
            x = _bottleneck(x, width, stride, block == 1, f"conv{stage}_block{block}")
    x = keras.layers.GlobalAveragePooling2D(name="avg_pool")(x)
    return keras.Model(inputs, x, name=f"resnet{depth}_torchvision")


def resnet50_torchvision(**arguments) -> keras.Model:
    """torchvision's ResNet-50 without `fc` (see `torchvision_resnet`)."""
    return torchvision_resnet(50, **arguments)


def resnet101_torchvision(**arguments) -> keras.Model:
    """torchvision's ResNet-101 without `fc` (see `torchvision_resnet`)."""
    return torchvision_resnet(101, **arguments)


def _inverted_residual(x, output_channels: int, stride: int, expansion: int, name: str):
    """TSM's InvertedResidual: [N, H, W, C] -> [N, H/stride, W/stride, output_channels];
    `name` is keras.applications' ("expanded_conv" for the first block, else "block_M")."""
    input_channels = x.shape[-1]
    hidden = input_channels * expansion
    y = x
    if expansion != 1:
        y = _convolution(hidden, 1, 1, f"{name}_expand")(y)
        y = _batch_norm(f"{name}_expand_BN")(y)
        y = keras.layers.ReLU(6.0, name=f"{name}_expand_relu")(y)
    y = keras.layers.ZeroPadding2D(1, name=f"{name}_pad")(y)
    y = keras.layers.DepthwiseConv2D(3, strides=stride, use_bias=False, name=f"{name}_depthwise")(y)
    y = _batch_norm(f"{name}_depthwise_BN")(y)
    y = keras.layers.ReLU(6.0, name=f"{name}_depthwise_relu")(y)
    y = _convolution(output_channels, 1, 1, f"{name}_project")(y)
    y = _batch_norm(f"{name}_project_BN")(y)
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
    x = _convolution(stem_width, 3, 2, "Conv1")(x)
    x = _batch_norm("bn_Conv1")(x)
    x = keras.layers.ReLU(6.0, name="Conv1_relu")(x)
    index = 0
    for expansion, channels, blocks, first_stride in settings:
        for block in range(blocks):
            block_name = "expanded_conv" if index == 0 else f"block_{index}"
            stride = first_stride if block == 0 else 1
            x = _inverted_residual(x, channels, stride, expansion, block_name)
            index += 1
    x = _convolution(last_width, 1, 1, "Conv_1")(x)
    x = _batch_norm("Conv_1_bn")(x)
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
    _check_arguments("mobilenet_v2_tsm", include_top, weights, pooling)
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
    _check_arguments(
        "test_mobilenet_v2", include_top, weights, pooling, "a test network has no weights"
    )
    return _mobilenet_v2("test_mobilenet_v2", TEST_MOBILENET_V2_SETTINGS, 16, 64, input_shape)
