"""The allowed values of every choice in a recipe: one `Literal` alias per choice.

Each alias types its field in actrec.config.recipe and is THE list of its values; the tuple
beside it (`MODALITIES = get_args(Modality)`) is what code that checks or lists the values
imports (actrec.data, actrec.models, actrec.train), and what `validate_recipe` checks with.

This module imports nothing from actrec but the backbone registry (actrec.backbones.registry,
standard library only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from actrec.backbones.registry import (
    BACKBONES,
    CLIP_FAMILIES,
    CLIP_NETWORKS,
    shiftable_backbone_names,
)

Modality = Literal["rgb", "flow"]
Sampling = Literal["tsn", "dense"]
SegmentArchitecture = Literal["tsn", "tsm"]
Architecture = Literal[(*get_args(SegmentArchitecture), *CLIP_FAMILIES)]  # type: ignore[misc]
"""A segment model ("tsn", "tsm": a per-frame backbone) or a family of clip networks of the
registry ("videomae": a video in, logits out)."""
Backbone = Literal[(*BACKBONES, *CLIP_NETWORKS)]  # type: ignore[valid-type]
"""A name of the backbone registry (actrec.backbones.registry), in registry order: the
per-frame backbones, then the clip networks' sizes (model.architecture names the family)."""
ShiftPlacement = Literal["blockres", "block"]
ShiftDirection = Literal["bidirectional", "online"]
LrCoupling = Literal["constant", "linear", "sqrt"]
Decay = Literal["step", "cosine", "none"]
Optimizer = Literal["sgd", "adam", "adamw"]
Sync = Literal["allreduce", "kavg"]
AdamState = Literal["average", "local", "reset"]
WeightDecayMode = Literal["coupled", "decoupled"]
MixedPrecision = Literal["none", "float16", "bfloat16"]
Strategy = Literal["auto", "one-device", "mirrored", "multi-worker"]
Communication = Literal["auto", "ring", "nccl"]
DistillFeatures = Literal["clip", "segments", "logits", "maps"]
ClassBalance = Literal["none", "weights", "sampling"]
Probe = Literal["none", "linear"]

MODALITIES: tuple[str, ...] = get_args(Modality)
SAMPLINGS: tuple[str, ...] = get_args(Sampling)
ARCHITECTURES: tuple[str, ...] = get_args(Architecture)
SEGMENT_ARCHITECTURES: tuple[str, ...] = get_args(SegmentArchitecture)
CLIP_ARCHITECTURES: tuple[str, ...] = tuple(CLIP_FAMILIES)
"""The architectures whose network takes the whole clip (the registry's clip families)."""
BACKBONE_NAMES: tuple[str, ...] = get_args(Backbone)
SHIFTABLE_BACKBONES: tuple[str, ...] = tuple(shiftable_backbone_names())
"""Backbones TSM can insert temporal shifts into (those with a registry shift_family)."""
SHIFT_PLACEMENTS: tuple[str, ...] = get_args(ShiftPlacement)
SHIFT_DIRECTIONS: tuple[str, ...] = get_args(ShiftDirection)
LR_COUPLINGS: tuple[str, ...] = get_args(LrCoupling)
DECAYS: tuple[str, ...] = get_args(Decay)
OPTIMIZERS: tuple[str, ...] = get_args(Optimizer)
ADAM_OPTIMIZERS = ("adam", "adamw")
"""The optimizers with Adam's moments (adamw: Adam with AdamW's decoupled decay)."""
SYNCS: tuple[str, ...] = get_args(Sync)
ADAM_STATES: tuple[str, ...] = get_args(AdamState)
WEIGHT_DECAY_MODES: tuple[str, ...] = get_args(WeightDecayMode)
MIXED_PRECISIONS: tuple[str, ...] = get_args(MixedPrecision)
STRATEGIES: tuple[str, ...] = get_args(Strategy)
COMMUNICATIONS: tuple[str, ...] = get_args(Communication)
DISTILL_FEATURES: tuple[str, ...] = get_args(DistillFeatures)
CLASS_BALANCES: tuple[str, ...] = get_args(ClassBalance)
PROBES: tuple[str, ...] = get_args(Probe)

NAMED_WEIGHTS = ("imagenet", "none")
TRAINED_WEIGHTS_PREFIX = "run:"
"""model.weights "run:PATH": start from the finished run (or export) at PATH (fine-tuning,
actrec.train.start.starting_point)."""


@dataclass(frozen=True)
class WeightsSource:
    """What a model.weights value names.

    kind: "imagenet", "none" (random initialisation), "file" (path: a no-top weight file) or
        "run" (path: the finished run directory or export folder of "run:PATH", "" when it
        names none, which `validate_recipe` refuses).
    """

    kind: str
    path: str = ""

    @property
    def is_run(self) -> bool:
        """Whether the weights come from a trained run (or export): "run:PATH"."""
        return self.kind == "run"


def weights_source(weights: str) -> WeightsSource:
    """What model.weights `weights` names: the one reading of "run:PATH"."""
    if weights.startswith(TRAINED_WEIGHTS_PREFIX):
        return WeightsSource("run", weights[len(TRAINED_WEIGHTS_PREFIX) :].strip())
    if weights in NAMED_WEIGHTS:
        return WeightsSource(weights)
    return WeightsSource("file", weights)


def run_weights(path: object) -> str:
    """The model.weights value that starts from the run (or export) at `path`: "run:PATH"."""
    return f"{TRAINED_WEIGHTS_PREFIX}{path}"
