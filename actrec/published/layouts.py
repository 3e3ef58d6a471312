"""A published PyTorch state dict brought to one spelling (actrec.backbones.published_layout)
with what its keys say of the network.

Which source a state dict is, its module names in actrec's spelling and the backbone each
network family loads into are the source's (actrec.published.sources: TSM's repository,
mmaction2, torchvision, TSM's MobileNetV2); the family's first convolution tells the family
(actrec.backbones.registry.PUBLISHED_LAYOUTS). The keys also say whether and where a temporal
shift sits (its wrapper's `.net`: on a block's first convolution, "blockres", or on the
whole block, "block"), the depth of a ResNet (every stage's block count) and the input
channels (3 for RGB, 2L for flow). Weights are numpy arrays in PyTorch's layout;
actrec.published.weights maps them onto a Keras model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from actrec.backbones.published_layout import CLASSIFIER_MODULE, family_of
from actrec.backbones.registry import PUBLISHED_LAYOUTS
from actrec.errors import WeightsError
from actrec.published.sources.registry import PublishedSource, source_of_keys, strip_prefix

IGNORED_PARAMETERS = ("num_batches_tracked",)
_RESNET_BLOCK = re.compile(r"^layer(\d)\.(\d+)\.")
RESNET_DEPTHS = {(3, 4, 6, 3): 50, (3, 4, 23, 3): 101}
"""Blocks of torchvision's layer1-layer4 (bottleneck blocks) -> ResNet depth."""


@dataclass(frozen=True)
class PublishedNetwork:
    """A published state dict brought to actrec's module spelling.

    source: the registered source whose state dict it is (its name is `layout`).
    modules: module path -> {parameter name: array in PyTorch's layout}.
    family: "resnet" or "mobilenet_v2" (actrec.backbones.registry.PUBLISHED_LAYOUTS); depth:
    50 / 101 for a ResNet (read from every stage's block count when asked: WeightsError for
    a ResNet actrec does not build), else None; backbone: the source's for the family.
    shift_placement: "blockres", "block", or None when no module is shifted.
    shifted_modules: the modules that had a shift wrapper (`.net`), in actrec's spelling.
    """

    source: PublishedSource
    family: str
    modules: dict[str, dict[str, np.ndarray]]
    input_channels: int
    num_classes: int
    shift_placement: str | None
    shifted_modules: tuple[str, ...] = field(default=())

    @property
    def layout(self) -> str:
        """The source's name, as a converted run's run.json records it."""
        return self.source.name

    @property
    def depth(self) -> int | None:
        return _resnet_depth(self.modules) if self.family == "resnet" else None

    @property
    def backbone(self) -> str:
        """actrec's backbone name for this network (its source's, for its family)."""
        return self.source.backbone(self.family, self.depth)


def detect_layout(keys: list[str]) -> str:
    """The layout (the source's name) of a state dict whose keys are `keys` (DataParallel's
    `module.` removed); WeightsError when no source claims them."""
    return source_of_keys(keys).name


def _unwrapped(module: str) -> tuple[str, str | None]:
    """(`module` without a shift wrapper's `.net`, the wrapped module or None)."""
    parts = module.split(".")
    if "net" not in parts:
        return module, None
    index = parts.index("net")
    return ".".join(parts[:index] + parts[index + 1 :]), ".".join(parts[:index])


def _placement(wrapped: str, family: str) -> str:
    """Where a shift wrapper around `wrapped` (actrec's spelling) sits: a whole block of
    `family`, or a block's first convolution (any other module counts as that too)."""
    return "block" if PUBLISHED_LAYOUTS[family].block.match(wrapped) else "blockres"


def published_network(state_dict: dict[str, np.ndarray]) -> PublishedNetwork:
    """The network `state_dict` (a published file's tensors, keys as stored) holds, in
    actrec's module spelling; WeightsError for a layout actrec does not convert."""
    keys = {strip_prefix(key, "module."): value for key, value in state_dict.items()}
    source = source_of_keys(list(keys))
    modules: dict[str, dict[str, np.ndarray]] = {}
    wrappers, shifted = set(), []
    for key, value in keys.items():
        module, _, parameter = key.rpartition(".")
        if parameter in IGNORED_PARAMETERS:
            continue
        module, wrapped = _unwrapped(module)
        name = source.module_name(module)
        if wrapped is not None:
            wrappers.add(source.module_name(wrapped))
            shifted.append(name)
        modules.setdefault(name, {})[parameter] = np.asarray(value)
    family = family_of(modules)
    return PublishedNetwork(
        source=source,
        family=family,
        modules=modules,
        input_channels=_input_channels(modules, family),
        num_classes=_num_classes(modules),
        shift_placement=_one_placement({_placement(wrapped, family) for wrapped in wrappers}),
        shifted_modules=tuple(sorted(set(shifted))),
    )


def _resnet_depth(modules: dict) -> int:
    """The depth of a torchvision ResNet from every stage's block count (ResNet-34 has
    ResNet-50's counts, of basic blocks: a block's third convolution tells them apart)."""
    blocks: dict[int, set[int]] = {}
    for name in modules:
        if match := _RESNET_BLOCK.match(name):
            blocks.setdefault(int(match.group(1)), set()).add(int(match.group(2)))
    counts = tuple(max(blocks.get(stage, {-1})) + 1 for stage in (1, 2, 3, 4))
    bottleneck = "layer1.0.conv3" in modules
    if not bottleneck or counts not in RESNET_DEPTHS:
        kind = "bottleneck" if bottleneck else "basic (two-convolution)"
        raise WeightsError(
            f"a ResNet of {kind} blocks, {counts} per stage: actrec converts ResNet-50 "
            "(3, 4, 6, 3 bottleneck blocks) and ResNet-101 (3, 4, 23, 3)"
        )
    return RESNET_DEPTHS[counts]


def _input_channels(modules: dict, family: str) -> int:
    stem = PUBLISHED_LAYOUTS[family].stem
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
