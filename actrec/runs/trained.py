"""A finished training run, read back from its run directory for evaluation and export.

    RUN/recipe.yaml        -> the recipe (model and clip settings)
    RUN/run.json           -> the classes and the prepared data folder it was trained on
    RUN/final.weights.h5   -> the trained weights (the last epoch's)
    RUN/best.weights.h5    -> the weights of the best validation top-1, when it validated

The weights of a segment model do not depend on its number of segments, so the model can
be rebuilt with another T (TSN's 25-frame test) and given the same weights. A run folder may
have been handed over: its recipe is read from inside it (actrec.config.confined_files).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from actrec.config.files import load_folder_recipe
from actrec.errors import ConfigError, DatasetError
from actrec.models.factory import build_model
from actrec.runs.folder import (
    BEST_WEIGHTS_FILE,
    FINAL_WEIGHTS_FILE,
    RECIPE_FILE,
    RUN_FILE,
)
from actrec.runs.record import RunRecord, load_run_record

if TYPE_CHECKING:
    from actrec.config.recipe import Recipe

RUN_AGAIN = "train the run again with `actrec train` (or restore the folder)"
CHECKPOINT_CHOICES = ("final", "best")
"""Which trained weights evaluation and export use: "final" (final.weights.h5, the default:
what the published protocols report) or "best" (best.weights.h5, chosen on validation)."""


@dataclass(frozen=True)
class TrainedRun:
    """What a finished run directory holds.

    recipe: the resolved actrec.config.Recipe the run trained with.
    classes: class names, index = label.
    data_dir: the prepared folder it was trained on (as recorded; may have moved).
    prepare_settings: that folder's preparation settings (frame_size, flow, fps...), else
        those run.json records (a converted published model), {} when neither is there.
    checkpoint: "final" or "best": which weights `weights_path` is.
    """

    run_dir: Path
    recipe: Recipe
    classes: tuple[str, ...]
    data_dir: Path | None
    prepare_settings: dict
    weights_path: Path
    record: RunRecord
    checkpoint: str = "final"

    @property
    def modality(self) -> str:
        return self.recipe.data.modality

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    @property
    def name(self) -> str:
        return self.run_dir.name


def _prepare_settings(data_dir: Path | None) -> dict:
    if data_dir is None:
        return {}
    try:
        manifest = json.loads((data_dir / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    settings = manifest.get("settings", {})
    return settings if isinstance(settings, dict) else {}


def _recorded_settings(record: RunRecord) -> dict:
    """The preparation settings run.json records itself (a converted published model, which
    has no prepared folder: actrec.published.convert), {} when none."""
    settings = record.prepare_settings
    return dict(settings) if isinstance(settings, dict) else {}


def load_trained_run(run_dir: Path | str, checkpoint: str = "final") -> TrainedRun:
    """The finished run in `run_dir` with its `checkpoint` weights ("final" or "best");
    ConfigError naming the file and the fix otherwise."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ConfigError(
            f"{run_dir} is not a run directory; give the --workdir of a finished `actrec train`"
        )
    if not (run_dir / RECIPE_FILE).is_file() or not (run_dir / RUN_FILE).is_file():
        raise ConfigError(
            f"{run_dir} has no {RECIPE_FILE} / {RUN_FILE}: it is not an actrec run directory; "
            "give the --workdir of `actrec train`"
        )
    record = load_run_record(run_dir)
    if checkpoint not in CHECKPOINT_CHOICES:
        raise ConfigError(
            f"checkpoint {checkpoint!r} is not valid; use one of {', '.join(CHECKPOINT_CHOICES)}"
        )
    weights_path = run_dir / FINAL_WEIGHTS_FILE
    if checkpoint == "best":
        weights_path = _best_weights(run_dir, record)
    elif not weights_path.is_file():
        raise ConfigError(
            f"{run_dir} has no {FINAL_WEIGHTS_FILE}: its training has not finished (status "
            f"{record.status or 'unknown'!r}); finish it with `actrec train --workdir "
            f"{run_dir} --data DATA --resume`"
        )
    data = record.data
    data_dir = Path(data) if isinstance(data, str) else None
    return TrainedRun(
        run_dir=run_dir,
        recipe=load_folder_recipe(run_dir, RECIPE_FILE, RUN_AGAIN),
        classes=tuple(str(name) for name in record.classes),
        data_dir=data_dir,
        prepare_settings=_prepare_settings(data_dir) or _recorded_settings(record),
        weights_path=weights_path,
        record=record,
        checkpoint=checkpoint,
    )


def _best_weights(run_dir: Path, record: RunRecord) -> Path:
    path = run_dir / BEST_WEIGHTS_FILE
    if path.is_file():
        return path
    raise ConfigError(
        f"{run_dir} has no {BEST_WEIGHTS_FILE}: the run validated on nothing (no val split, "
        "data.validation_holdout 0, or data.validation_split none; the test split is never "
        f"used to choose) or has not validated yet (status {record.status or 'unknown'!r}); "
        "use --checkpoint final, or train with data.validation_holdout=0.1"
    )


def resolve_data_dir(run: TrainedRun, data_dir: Path | str | None) -> Path:
    """`data_dir`, or the prepared folder the run trained on; DatasetError if neither exists."""
    if data_dir is not None:
        return Path(data_dir)
    if run.data_dir is not None and (run.data_dir / "manifest.json").is_file():
        return run.data_dir
    raise DatasetError(
        f"the data {run.run_dir} was trained on ({run.data_dir}) is no longer there; give "
        "--data PREPARED (a folder written by `actrec prepare`)"
    )


def build_trained_model(run: TrainedRun, num_segments: int | None = None):
    """The run's keras.Model with its trained weights, for T = `num_segments` (default the
    recipe's): frames [B, T, crop, crop, C] in the stored 0-255 scale -> logits [B, K]."""
    recipe = run.recipe
    if num_segments is not None and num_segments != recipe.data.num_segments:
        recipe = replace(recipe, data=replace(recipe.data, num_segments=num_segments))
    recipe = without_pretrained_weights(recipe)
    model = build_model(recipe.model, recipe.data, run.num_classes)
    try:
        model.load_weights(str(run.weights_path))
    except (ValueError, OSError) as error:
        raise ConfigError(
            f"{run.weights_path}: cannot load the trained weights into the model of "
            f"{run.run_dir / RECIPE_FILE} ({error}); was the recipe edited after training?"
        ) from None
    return model


def without_pretrained_weights(recipe):
    """The recipe with model.weights 'none': the trained weights replace any ImageNet
    initialisation, so rebuilding must not need the pretrained file."""
    return replace(recipe, model=replace(recipe.model, weights="none"))
