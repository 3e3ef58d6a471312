"""torchvision's ResNet module names -> the Keras layers of actrec's networks: `conv1`, `bn1`,
`layer{S}.{B}.conv{I}`, `layer{S}.{B}.bn{I}`, `layer{S}.{B}.downsample.0` (1x1 convolution)
and `.downsample.1` (its BatchNorm). TSM's and mmaction2's ResNet files use these names too
(each source, actrec.published.sources, brings its own spelling to them first). Standard
library only."""

from __future__ import annotations

import re

from actrec.backbones.spec import PublishedLayout

_RESNET_STEM = {"conv1": "conv1_conv", "bn1": "conv1_bn"}
_RESNET_BLOCK = re.compile(r"^layer(\d)\.(\d+)\.(conv|bn)(\d)$")
_RESNET_DOWNSAMPLE = re.compile(r"^layer(\d)\.(\d+)\.downsample\.([01])$")


def resnet_layer_name(module: str) -> str | None:
    """The Keras layer of torchvision ResNet module `module`, None if it has none."""
    if module in _RESNET_STEM:
        return _RESNET_STEM[module]
    if match := _RESNET_BLOCK.match(module):
        stage, block, kind, index = match.groups()
        return f"conv{int(stage) + 1}_block{int(block) + 1}_{index}_{kind}"
    if match := _RESNET_DOWNSAMPLE.match(module):
        stage, block, index = match.groups()
        kind = "conv" if index == "0" else "bn"
        return f"conv{int(stage) + 1}_block{int(block) + 1}_0_{kind}"
    return None


TORCHVISION_RESNET_LAYOUT = PublishedLayout(
    "resnet", "conv1", re.compile(r"^layer\d\.\d+$"), resnet_layer_name
)
