"""What a training run validates on (and selects best.weights.h5 with).

Never the test split: it is for `actrec eval`, and choosing epochs or weights on it makes
the test accuracy optimistic. `data.validation_split: auto` resolves, in order, to

1. a held-out part of train when `data.validation_holdout` > 0 (seeded, stratified,
   actrec.data.input.holdout; recorded in run.json; not trained on);
2. the prepared `val` split when the data has one (Kinetics);
3. nothing: UCF101 and HMDB51 have no val split, and their published protocols train on the
   whole train split and report the final model, so built-in recipes keep selection off
   there rather than give up training videos (`data.validation_holdout=0.1` turns it on).
"""

from __future__ import annotations

from dataclasses import dataclass

from actrec.config.recipe import VALIDATION_SPLIT_AUTO, VALIDATION_SPLIT_NONE
from actrec.data.input.holdout import held_out_videos
from actrec.errors import ConfigError

HOLDOUT_NAME = "holdout"
VAL_SPLIT = "val"


@dataclass(frozen=True)
class ValidationPlan:
    """split: the prepared split validation reads (None: no validation); held_out: the
    video ids of that split held out from training (a hold-out of train), else empty;
    name: how logs call it ("val", "holdout", ...); note: why there is none."""

    split: str | None
    held_out: tuple[str, ...] = ()
    name: str = ""
    note: str = ""

    def to_json(self, fraction: float, seed: int) -> dict:
        """run.json's record of a hold-out."""
        return {
            "split": self.split,
            "fraction": fraction,
            "seed": seed,
            "num_videos": len(self.held_out),
            "videos": list(self.held_out),
        }


def validation_plan(recipe, manifest: dict) -> ValidationPlan:
    """The plan for `recipe` on the prepared data whose manifest is `manifest`."""
    data = recipe.data
    available = {
        split: int(info.get("videos", 0)) for split, info in manifest.get("splits", {}).items()
    }
    if data.validation_split == VALIDATION_SPLIT_NONE or recipe.runtime.validate_every_epochs == 0:
        return ValidationPlan(None)
    if data.validation_split != VALIDATION_SPLIT_AUTO:
        if not available.get(data.validation_split):
            raise ConfigError(
                f"data.validation_split {data.validation_split!r}: the data has no such split "
                f"(it has {', '.join(available)}); use auto or none"
            )
        return ValidationPlan(data.validation_split, name=data.validation_split)
    if data.validation_holdout > 0:
        held_out = held_out_videos(
            manifest, data.train_split, data.validation_holdout, recipe.runtime.seed
        )
        return ValidationPlan(data.train_split, held_out, HOLDOUT_NAME)
    if available.get(VAL_SPLIT):
        return ValidationPlan(VAL_SPLIT, name=VAL_SPLIT)
    return ValidationPlan(
        None,
        note=(
            "no validation: the data has no val split and its test split is kept for `actrec "
            "eval`; set data.validation_holdout=0.1 to validate (and keep best.weights.h5) on "
            "a held-out 10% of train"
        ),
    )
