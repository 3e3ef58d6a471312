"""The networks the every-backbone tests run (tests/models/test_every_backend.py: every
Keras backend; tests/export/test_rebuilt_every_backbone.py: an untrusted SavedModel rebuilt
by actrec), taken from the registry (actrec.backbones.registry.BACKBONES), as timm's tests
run over `list_models()`.

A family is the backbones of one constructor but for its size (ResNet50/101/152,
EfficientNetB0-B3, ...); its first member runs on RGB as a TSM where TSM can be built on it
(the TSN without the shift is the same network), else as a TSN; MobileNetV2 as both and on
flow too (the first convolution that takes 2L channels is every family's same code). The
suite runs SUITE_CASES, small networks; ACTREC_EVERY_BACKBONE=families runs a member of
every family (minutes), =all every registered backbone in every variant; a clip family
(videomae) runs its first size, =all every size."""

from __future__ import annotations

import os
import re

from actrec.backbones.registry import BACKBONES, CLIP_FAMILIES, CLIP_NETWORKS


def family(name: str) -> str:
    """A backbone's family: its constructor without the size (ResNet50 -> ResNet); a clip
    network's, its architecture (videomae)."""
    if name in CLIP_NETWORKS:
        return next(a for a, f in CLIP_FAMILIES.items() if CLIP_NETWORKS[name] in f.clip_networks)
    spec = BACKBONES[name]
    if spec.layout == "pytorch":
        return re.sub(r"\d+", "", spec.constructor)
    return re.sub(r"(B\d+|S|Small|Large|\d+)$", "", spec.constructor)


SUITE_CASES = (
    ("mobilenet_v2", "tsn", "rgb"),
    ("mobilenet_v2", "tsm", "flow"),
    ("test_mobilenet_v2", "tsm", "rgb"),
    ("test_videomae", "videomae", "rgb"),
    ("test_movinet", "movinet", "rgb"),
)
"""What the suite runs by default: both architectures and both modalities (TSN on RGB, TSM
on a flow stack) on a Keras-layout network and a TSM on a PyTorch-layout one, and each clip
family's test network as a recipe builds it, small ones (Keras under JAX builds a network
from its config op by op: EfficientNetB0 takes 22 s there, the families minutes; the other
two MobileNetV2 pairs added 12 s of CPU to the suite and no layer)."""


def cases(which: str | None = None) -> list[tuple[str, str, str]]:
    """(backbone, architecture, modality) of the networks to check: `which` (default:
    ACTREC_EVERY_BACKBONE) "families" (see the module), "all" (every registered backbone
    in every variant) or anything else: SUITE_CASES."""
    which = which or os.environ.get("ACTREC_EVERY_BACKBONE", "suite")
    if which not in ("families", "all"):
        return list(SUITE_CASES)
    seen, chosen = set(), []
    for name, spec in BACKBONES.items():
        if which == "families" and family(name) in seen:
            continue
        seen.add(family(name))
        full = which == "all" or name == "mobilenet_v2"
        architectures = ("tsm",) if spec.shift_family else ("tsn",)
        if full and spec.shift_family:
            architectures = ("tsn", "tsm")
        modalities = ("rgb", "flow") if full else ("rgb",)
        chosen += [(name, a, m) for a in architectures for m in modalities]
    for architecture, clip_family in CLIP_FAMILIES.items():
        networks = [network.name for network in clip_family.clip_networks]
        kept = networks if which == "all" else networks[:1]
        chosen += [(name, architecture, "rgb") for name in kept]
    return chosen


def input_size(name: str) -> int:
    """The smallest square input the suite runs a backbone at."""
    return 75 if name == "inception_v3" else 32  # InceptionV3's smallest input
