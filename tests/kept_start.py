"""What the clip families' fine-tuning tests share (tests/train/test_videomae_finetune.py,
test_movinet_finetune.py): a run's test-split logits, and a source run trained once per
test run that a fine-tuning starts from."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from fixtures.built_once import built_once

from actrec.config.files import load_recipe
from actrec.config.overrides import apply_overrides
from actrec.evaluation.evaluate import evaluate_run
from actrec.evaluation.protocols import resolve_protocol
from actrec.train.run import train


def centre_scores(run_dir: Path) -> np.ndarray:
    """The run's centre-view logits [videos, classes] on its data's test split."""
    out = run_dir.with_name(f"{run_dir.name}-eval")
    evaluate_run(run_dir, resolve_protocol("centre"), out_dir=out)
    return np.load(out / "scores.npz")["scores"]


def trained_source(recipe_name: str, settings, prepared: Path, tmp_path_factory, name: str):
    """(a run of `recipe_name` with `settings` trained from scratch on `prepared` once per
    test run, its test-split logits)."""

    def build(folder):
        recipe = apply_overrides(load_recipe(recipe_name), [*settings, "model.weights=none"])
        train(recipe, prepared, folder)
        return folder, centre_scores(folder)

    return built_once(tmp_path_factory, name, build)
