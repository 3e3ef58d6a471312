"""The layers of the PyTorch layouts (torchvision's ResNet, TSM's MobileNetV2: the
resnet_torchvision and mobilenet_v2 families' build.py), built in Keras so that a PyTorch
state dict maps onto them one tensor to one weight.

keras.applications' networks cannot load a published PyTorch file: its ResNet puts a stage's
stride 2 on the first 1x1 convolution (torchvision: on the 3x3), gives its convolutions
biases and uses BatchNorm epsilon 1.001e-5; its MobileNetV2 pads a stride-2 convolution on
one side ("same"), where PyTorch pads 1 pixel on every side, and uses epsilon 1e-3. These
layers follow the PyTorch modules: convolutions without bias, BatchNorm epsilon 1e-5 and
PyTorch's momentum 0.1 (Keras's 0.9).

Layer names are keras.applications' own (`convK_blockM_1_conv`, `block_M_expand`, ...), so
that the temporal shift insertion, partial BN, learning-rate groups, rematerialisation and
the streaming export find the same layers as in the keras.applications networks. Each
builder takes keras.applications' arguments (include_top=False, weights=None, input_shape,
pooling="avg") and returns [N, H, W, C] -> [N, F] pooled features.
"""

from __future__ import annotations

import keras

from actrec.errors import ConfigError

BATCH_NORM_EPSILON = 1e-5
BATCH_NORM_MOMENTUM = 0.9  # PyTorch's momentum 0.1 (Keras keeps 1 - momentum of the new value)


def check_arguments(
    name: str,
    include_top: bool,
    weights,
    pooling: str,
    weights_source: str = "its weights come from a converted PyTorch file "
    "(`actrec pretrained convert`)",
) -> None:
    """ConfigError unless a PyTorch-layout network is asked for as actrec builds it: no
    classifier, no weights, average pooling."""
    if include_top or weights is not None or pooling != "avg":
        raise ConfigError(
            f"{name} is built without its classifier, randomly initialised and average-pooled "
            f"(include_top=False, weights=None, pooling='avg'); {weights_source}"
        )


def batch_norm(name: str) -> keras.layers.BatchNormalization:
    """A BatchNormalization with PyTorch's epsilon and momentum."""
    return keras.layers.BatchNormalization(
        epsilon=BATCH_NORM_EPSILON, momentum=BATCH_NORM_MOMENTUM, name=name
    )


def convolution(filters: int, kernel: int, stride: int, name: str) -> keras.layers.Conv2D:
    """A bias-free Conv2D, unpadded (the PyTorch padding is an explicit ZeroPadding2D)."""
    return keras.layers.Conv2D(filters, kernel, strides=stride, use_bias=False, name=name)
