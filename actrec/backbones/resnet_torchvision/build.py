"""torchvision's ResNet (torchvision/models/resnet.py, "V1.5") in Keras, without its `fc`:
convolutions without bias, BatchNorm epsilon 1e-5, the stride on the bottleneck's 3x3
convolution, explicit symmetric zero padding (the 3x3 max pool's zero padding equals
PyTorch's -inf padding: it follows a ReLU); keras.applications' layer names
(actrec.backbones.torch_layers). [N, H, W, C] -> [N, 2048].
"""

from __future__ import annotations

import keras

from actrec.backbones.spec import BackboneSpec
from actrec.backbones.torch_layers import batch_norm, check_arguments, convolution
from actrec.errors import ConfigError

RESNET_STAGE_BLOCKS = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3)}
RESNET_STAGE_WIDTHS = (64, 128, 256, 512)


def _bottleneck(x, width: int, stride: int, projection: bool, name: str):
    """torchvision's Bottleneck: [N, H, W, C] -> [N, H/stride, W/stride, 4 * width]."""
    if projection:
        shortcut = convolution(4 * width, 1, stride, f"{name}_0_conv")(x)
        shortcut = batch_norm(f"{name}_0_bn")(shortcut)
    else:
        shortcut = x
    y = convolution(width, 1, 1, f"{name}_1_conv")(x)
    y = batch_norm(f"{name}_1_bn")(y)
    y = keras.layers.ReLU(name=f"{name}_1_relu")(y)
    y = keras.layers.ZeroPadding2D(1, name=f"{name}_2_pad")(y)
    y = convolution(width, 3, stride, f"{name}_2_conv")(y)
    y = batch_norm(f"{name}_2_bn")(y)
    y = keras.layers.ReLU(name=f"{name}_2_relu")(y)
    y = convolution(4 * width, 1, 1, f"{name}_3_conv")(y)
    y = batch_norm(f"{name}_3_bn")(y)
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
    check_arguments(f"resnet{depth}_torchvision", include_top, weights, pooling)
    if depth not in RESNET_STAGE_BLOCKS:
        raise ConfigError(f"torchvision ResNet depth {depth} is not built; use 50 or 101")
    inputs = keras.Input(tuple(input_shape), name="input_layer")
    x = keras.layers.ZeroPadding2D(3, name="conv1_pad")(inputs)
    x = convolution(64, 7, 2, "conv1_conv")(x)
    x = batch_norm("conv1_bn")(x)
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


def plain_network(
    spec: BackboneSpec, input_shape: tuple[int | None, int | None, int]
) -> keras.Model:
    """Returns the torchvision ResNet `spec` (its `constructor`), randomly initialised."""
    constructors = {
        "resnet50_torchvision": resnet50_torchvision,
        "resnet101_torchvision": resnet101_torchvision,
    }
    return constructors[spec.constructor](input_shape=tuple(input_shape))
