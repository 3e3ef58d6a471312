"""The layouts of published PyTorch video-model files, recognised by their keys and brought
to one spelling (actrec.published.module_names) with what the keys say of the network.

    layout        keys (after DataParallel's `module.`)              network
    tsm           base_model.* (+ `.net` of the shift wrapper), new_fc   TSM repository's TSN / TSM
    mmaction2     backbone.* (ConvModule `.conv` / `.bn`), cls_head.fc_cls   mmaction2 TSN / TSM
    torchvision   conv1, bn1, layer1.0.conv1, ..., fc                   ImageNet ResNet
    mobilenet     features.N.conv.M, classifier (a bare state dict)     TSM's MobileNetV2: its
                                                                        ImageNet file, or the
                                                                        online demo's model

The keys also say whether and where a temporal shift sits (its wrapper's `.net`: on a
block's first convolution, "blockres", or on the whole block, "block"), the depth of a ResNet
and the input channels (3 for RGB, 2L for flow). Weights are numpy arrays in PyTorch's
layout; actrec.published.weights maps them onto a Keras model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from actrec.errors import WeightsError
from actrec.published.module_names import CLASSIFIER_MODULE

LAYOUTS = ("tsm", "mmaction2", "torchvision", "mobilenet")
IGNORED_PARAMETERS = ("num_batches_tracked",)

_MMACTION2_STEM = {"conv1.conv": "conv1", "conv1.bn": "bn1"}
_MMACTION2_BLOCK = re.compile(r"^(layer\d\.\d+)\.(conv(\d))\.(conv|bn)$")
_MMACTION2_DOWNSAMPLE = re.compile(r"^(layer\d\.\d+)\.downsample\.(conv|bn)$")
_BLOCKRES_SHIFT = re.compile(r"^(layer\d\.\d+\.conv1|features\.\d+\.conv\.0)\.net$")
_BLOCK_SHIFT = re.compile(r"^(layer\d\.\d+|features\.\d+)\.net$")
_RESNET_STAGE3_BLOCK = re.compile(r"^layer3\.(\d+)\.")
RESNET_DEPTHS = {6: 50, 23: 101}
"""Blocks of torchvision's layer3 -> ResNet depth."""


@dataclass(frozen=True)
class PublishedNetwork:
    """A published state dict brought to actrec's module spelling.

    modules: module path -> {parameter name: array in PyTorch's layout}.
    family: "resnet" or "mobilenet_v2"; depth: 50 / 101 for a ResNet, else None.
    shift_placement: "blockres", "block", or None when no module is shifted.
    shifted_modules: the modules that had a shift wrapper (`.net`), in actrec's spelling.
    """

    layout: str
    family: str
    modules: dict[str, dict[str, np.ndarray]]
    depth: int | None
    input_channels: int
    num_classes: int
    shift_placement: str | None
    shifted_modules: tuple[str, ...] = field(default=())

    @property
    def backbone(self) -> str:
        """actrec's backbone name for this network."""
        if self.family == "mobilenet_v2":
            return "mobilenet_v2_tsm"
        return f"resnet{self.depth}_torchvision"


def _without_prefix(key: str, prefix: str) -> str:
    return key[len(prefix) :] if key.startswith(prefix) else key


def detect_layout(keys: list[str]) -> str:
    """The layout of a state dict whose keys are `keys` (DataParallel's `module.` removed);
    WeightsError when none fits."""
    if any(key.startswith("base_model.") for key in keys):
        return "tsm"
    if any(key.startswith("backbone.") for key in keys):
        return "mmaction2"
    if "layer1.0.conv1.weight" in keys and "conv1.weight" in keys:
        return "torchvision"
    if "features.0.0.weight" in keys:
        return "mobilenet"
    sample = ", ".join(sorted(keys)[:4])
    raise WeightsError(
        f"the state dict ({len(keys)} tensors; first keys: {sample}) is none of the layouts "
        "actrec converts: TSM's (base_model.*, new_fc), mmaction2's TSN / TSM "
        "(backbone.*, cls_head.fc_cls), torchvision's ImageNet ResNet (conv1, layer1.*, fc) "
        "or TSM's MobileNetV2 (features.*, classifier); docs/model-zoo.md lists the files"
    )


def _source_module(layout: str, module: str) -> str:
    """`module` (a source's path, `.net` wrappers already removed) in actrec's spelling."""
    if layout == "tsm":
        module = _without_prefix(module, "base_model.")
        if module in ("new_fc", "fc", "classifier"):  # dropout 0: the base model's own
            return CLASSIFIER_MODULE
        return module
    if layout == "mmaction2":
        if module == "cls_head.fc_cls":
            return CLASSIFIER_MODULE
        module = _without_prefix(module, "backbone.")
        if module in _MMACTION2_STEM:
            return _MMACTION2_STEM[module]
        if match := _MMACTION2_BLOCK.match(module):
            block, _, index, kind = match.groups()
            return f"{block}.{kind}{index}"
        if match := _MMACTION2_DOWNSAMPLE.match(module):
            block, kind = match.groups()
            return f"{block}.downsample.{0 if kind == 'conv' else 1}"
        return module
    if layout == "torchvision" and module == "fc":
        return CLASSIFIER_MODULE
    return module


def _shift_of(module: str) -> tuple[str, str | None]:
    """(`module` without the shift wrapper's `.net`, the placement that wrapper means)."""
    parts = module.split(".")
    for index, part in enumerate(parts):
        if part != "net":
            continue
        wrapped = ".".join(parts[: index + 1])
        unwrapped = ".".join(parts[:index] + parts[index + 1 :])
        bare = re.sub(r"^(base_model|backbone)\.", "", wrapped)
        bare = re.sub(r"\.conv\.net$", ".net", bare) if bare.startswith("layer") else bare
        if _BLOCKRES_SHIFT.match(bare):
            return unwrapped, "blockres"
        if _BLOCK_SHIFT.match(bare):
            return unwrapped, "block"
        return unwrapped, "blockres"
    return module, None


def published_network(state_dict: dict[str, np.ndarray]) -> PublishedNetwork:
    """The network `state_dict` (a published file's tensors, keys as stored) holds, in
    actrec's module spelling; WeightsError for a layout actrec does not convert."""
    keys = {_without_prefix(key, "module."): value for key, value in state_dict.items()}
    layout = detect_layout(list(keys))
    modules: dict[str, dict[str, np.ndarray]] = {}
    placements, shifted = set(), []
    for key, value in keys.items():
        module, _, parameter = key.rpartition(".")
        if parameter in IGNORED_PARAMETERS:
            continue
        module, placement = _shift_of(module)
        name = _source_module(layout, module)
        if placement is not None:
            placements.add(placement)
            shifted.append(name)
        modules.setdefault(name, {})[parameter] = np.asarray(value)
    family = "mobilenet_v2" if layout == "mobilenet" or "features.0.0" in modules else "resnet"
    return PublishedNetwork(
        layout=layout,
        family=family,
        modules=modules,
        depth=_resnet_depth(modules) if family == "resnet" else None,
        input_channels=_input_channels(modules, family),
        num_classes=_num_classes(modules),
        shift_placement=_one_placement(placements),
        shifted_modules=tuple(sorted(set(shifted))),
    )


def _resnet_depth(modules: dict) -> int:
    blocks = {
        int(match.group(1)) for name in modules if (match := _RESNET_STAGE3_BLOCK.match(name))
    }
    count = max(blocks, default=-1) + 1
    if count not in RESNET_DEPTHS:
        raise WeightsError(
            f"a ResNet whose layer3 has {count} blocks: actrec converts ResNet-50 (6) and "
            "ResNet-101 (23)"
        )
    return RESNET_DEPTHS[count]


def _input_channels(modules: dict, family: str) -> int:
    stem = "conv1" if family == "resnet" else "features.0.0"
    weight = modules.get(stem, {}).get("weight")
    if weight is None or weight.ndim != 4:
        raise WeightsError(f"the state dict has no first convolution ({stem}.weight)")
    return int(weight.shape[1])  # [out, in, kh, kw]


def _num_classes(modules: dict) -> int:
    weight = modules.get(CLASSIFIER_MODULE, {}).get("weight")
    if weight is None or weight.ndim != 2:
        raise WeightsError(
            "the state dict has no classifier (TSM's new_fc, mmaction2's cls_head.fc_cls, "
            "torchvision's fc or MobileNetV2's classifier)"
        )
    return int(weight.shape[0])  # [classes, features]


def _one_placement(placements: set[str]) -> str | None:
    if len(placements) > 1:
        raise WeightsError(
            "the state dict shifts some blocks' first convolution and some whole blocks; "
            "one placement (blockres or block) is expected"
        )
    return next(iter(placements), None)
