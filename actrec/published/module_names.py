"""PyTorch module paths of the two PyTorch layouts, and the Keras layer each one is: the
network families of published files (FAMILIES), shared by every source that publishes them.

The published files name modules in several ways (each source, actrec.published.sources,
brings them to one of these two spellings first):

- torchvision's ResNet: `conv1`, `bn1`, `layer{S}.{B}.conv{I}`, `layer{S}.{B}.bn{I}`,
  `layer{S}.{B}.downsample.0` (1x1 convolution) and `.downsample.1` (its BatchNorm);
- TSM's MobileNetV2 (archs/mobilenet_v2.py, also the online demo's): `features.0.{0,1}` (the
  stem convolution and BatchNorm), `features.{M}.conv.{J}` (inverted residual M, its J-th
  module), `features.18.{0,1}` (the last 1x1 convolution);
- the classifier of either: `classifier`.

actrec.models.torch_layout builds the Keras networks with keras.applications' layer names;
this module is the one table between the two. A family's first convolution tells it
(`family_of`) and gives the input channels; a "block" shift wraps one of its `block`s.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass

from actrec.errors import WeightsError

CLASSIFIER_MODULE = "classifier"

_RESNET_STEM = {"conv1": "conv1_conv", "bn1": "conv1_bn"}
_RESNET_BLOCK = re.compile(r"^layer(\d)\.(\d+)\.(conv|bn)(\d)$")
_RESNET_DOWNSAMPLE = re.compile(r"^layer(\d)\.(\d+)\.downsample\.([01])$")

MOBILENET_V2_LAST_FEATURE = 18
_MOBILENET_STEM = re.compile(r"^features\.(\d+)\.([01])$")
_MOBILENET_BLOCK = re.compile(r"^features\.(\d+)\.conv\.(\d)$")
_EXPANDED_BLOCK_MODULES = {
    0: "expand",
    1: "expand_BN",
    3: "depthwise",
    4: "depthwise_BN",
    6: "project",
    7: "project_BN",
}
_FIRST_BLOCK_MODULES = {0: "depthwise", 1: "depthwise_BN", 3: "project", 4: "project_BN"}


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


def mobilenet_v2_layer_name(module: str) -> str | None:
    """The Keras layer of TSM MobileNetV2 module `module`, None if it has none."""
    if match := _MOBILENET_STEM.match(module):
        feature, index = int(match.group(1)), match.group(2)
        if feature == 0:
            return "Conv1" if index == "0" else "bn_Conv1"
        if feature == MOBILENET_V2_LAST_FEATURE:
            return "Conv_1" if index == "0" else "Conv_1_bn"
        return None
    if match := _MOBILENET_BLOCK.match(module):
        feature, index = int(match.group(1)), int(match.group(2))
        if feature == 1:
            suffix = _FIRST_BLOCK_MODULES.get(index)
            return None if suffix is None else f"expanded_conv_{suffix}"
        suffix = _EXPANDED_BLOCK_MODULES.get(index)
        if suffix is None or not 2 <= feature < MOBILENET_V2_LAST_FEATURE:
            return None
        return f"block_{feature - 1}_{suffix}"
    return None


@dataclass(frozen=True)
class Family:
    """A network family in PyTorch's spelling: `stem`, its first convolution (every state
    dict of the family has it; its input channels are the clip's), `block`, a whole block
    (what a "block" shift wraps), and `layer_name`, a module's Keras layer."""

    stem: str
    block: re.Pattern
    layer_name: Callable[[str], str | None]


FAMILIES = {
    "resnet": Family("conv1", re.compile(r"^layer\d\.\d+$"), resnet_layer_name),
    "mobilenet_v2": Family("features.0.0", re.compile(r"^features\.\d+$"), mobilenet_v2_layer_name),
}
"""actrec.config.backbones.SHIFT_FAMILIES in PyTorch's layout."""


def family_of(modules: Collection[str]) -> str:
    """The family whose first convolution is one of `modules` (the first family when none
    is: its stem is then named as missing)."""
    present = (name for name, family in FAMILIES.items() if family.stem in modules)
    return next(present, next(iter(FAMILIES)))


def keras_layer_name(family: str, module: str) -> str | None:
    """The Keras layer of PyTorch module `module` of a `family` ("resnet" or
    "mobilenet_v2") network; the classifier is `classifier` in both; None if none."""
    if module == CLASSIFIER_MODULE:
        return CLASSIFIER_MODULE
    if family not in FAMILIES:
        raise WeightsError(f"no PyTorch layout is known for the {family!r} family")
    return FAMILIES[family].layer_name(module)
