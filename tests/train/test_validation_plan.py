"""What training validates on: a seeded stratified hold-out of train, the val split, or
nothing; never the test split (actrec.train.inputs.validation, actrec.data.input.holdout)."""

from __future__ import annotations

from collections import Counter

import pytest

from actrec.config.files import load_recipe
from actrec.config.overrides import apply_overrides
from actrec.data.input.holdout import held_out_videos
from actrec.errors import ConfigError
from actrec.train.inputs.validation import validation_plan


def _manifest(splits: dict[str, int], classes: int = 4) -> dict:
    """A manifest with `count` videos per class in each split."""
    videos = [
        {"id": f"{split}-c{label}-{index}", "split": split, "label": label, "status": "ok"}
        for split, count in splits.items()
        for label in range(classes)
        for index in range(count)
    ]
    videos.append({"id": "skipped", "split": "train", "label": 0, "status": "skipped"})
    return {
        "splits": {split: {"videos": count * classes} for split, count in splits.items()},
        "videos": videos,
    }


def _plan(manifest: dict, *settings: str):
    return validation_plan(apply_overrides(load_recipe("tsn-rgb-ucf101"), list(settings)), manifest)


def test_auto_never_validates_on_test():
    ucf = _manifest({"train": 10, "test": 4})
    plan = _plan(ucf)
    assert plan.split is None and "test split is kept for `actrec eval`" in plan.note
    assert "data.validation_holdout=0.1" in plan.note
    assert _plan(_manifest({"train": 10, "val": 2, "test": 4})).split == "val"
    assert _plan(ucf, "data.validation_split=none").split is None
    assert (
        _plan(_manifest({"train": 10, "val": 2}), "runtime.validate_every_epochs=0").split is None
    )


def test_a_holdout_is_stratified_seeded_and_disjoint_from_training():
    manifest = _manifest({"train": 10, "val": 2, "test": 4})
    plan = _plan(manifest, "data.validation_holdout=0.2")
    assert plan.split == "train" and plan.name == "holdout"  # before val: it was asked for
    assert Counter(video_id.split("-")[1] for video_id in plan.held_out) == {
        f"c{label}": 2 for label in range(4)
    }
    assert "skipped" not in plan.held_out and all(v.startswith("train-") for v in plan.held_out)
    assert plan.held_out == _plan(manifest, "data.validation_holdout=0.2").held_out
    other_seed = _plan(manifest, "data.validation_holdout=0.2", "runtime.seed=1").held_out
    assert other_seed != plan.held_out and len(other_seed) == 8
    assert plan.to_json(0.2, 0)["videos"] == list(plan.held_out)


def test_a_holdout_too_small_for_every_class_is_a_config_error():
    with pytest.raises(ConfigError, match=r"data\.validation_holdout=0\.05.*larger fraction"):
        held_out_videos(_manifest({"train": 10}), "train", 0.05, 0)  # 2 videos for 4 classes


def test_a_named_split_must_exist():
    with pytest.raises(ConfigError, match=r"'val'.*has train, test"):
        _plan(_manifest({"train": 10, "test": 4}), "data.validation_split=val")
