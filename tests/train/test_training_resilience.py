"""Training that survives trouble, on real tiny runs: a NaN loss rolled back (and a resume
after it bit-exact), best.weights.h5 chosen on a held-out part of train, damaged shards
named with their fix while the run's checkpoints stay as they were.

One module fixture trains the same recipe three times in this process (~1.5 min on 2
cores): "whole" without interruption, "split" stopped after the recovery and resumed, and
a copy of "split" while it was stopped, for the damaged-data tests.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from file_contents import folder_digests

from actrec.config.files import load_recipe
from actrec.config.overrides import apply_overrides
from actrec.train.run import train

pytestmark = pytest.mark.slow

SETTINGS = [
    "model.backbone=test_mobilenet_v2",
    "data.crop_size=32",
    "data.num_segments=2",
    "data.validation_holdout=0.5",  # 1 of the 2 train videos of each class
    "train.batch_size=4",
    "train.epochs=3",
    "train.recovery_lr_factor=0.5",
    "runtime.steps_per_epoch=3",
    "runtime.log_every_steps=1",
    "runtime.checkpoint_every_steps=2",
    "runtime.validate_every_epochs=1",
    "runtime.keep_checkpoints=20",
    "runtime.deterministic=true",
]
NAN_AT_STEP_5 = {"ACTREC_INJECT_NAN": "0:5"}  # actrec.train.life.faults: worker 0, global step 5


def _metrics(run_dir: Path, event: str) -> list[dict]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [row for row in rows if row["event"] == event]


def _checkpoint_floats(path: Path, count: int) -> list[np.ndarray]:
    """The model's variables as RunCheckpoints stores them (model_state/i, in order)."""
    import tensorflow as tf

    reader = tf.train.load_checkpoint(str(path))
    return [reader.get_tensor(f"model_state/{i}/.ATTRIBUTES/VARIABLE_VALUE") for i in range(count)]


def _model_values(run_dir: Path, checkpoint: str) -> list[np.ndarray]:
    """The float variables of the run's model with its `checkpoint` weights, in order (a
    rebuilt model's seed-generator state comes from the process, not the file: left out)."""
    from actrec.runs.trained import build_trained_model, load_trained_run

    model = build_trained_model(load_trained_run(run_dir, checkpoint))
    values = [np.array(variable.value) for variable in model.variables]
    return [value if value.dtype.kind == "f" else None for value in values]


def _assert_same_floats(first: list, second: list) -> None:
    assert len(first) == len(second)
    for mine, theirs in zip(first, second, strict=True):
        if mine is not None:
            np.testing.assert_array_equal(mine, theirs)


@pytest.fixture(scope="module")
def runs(tiny_synthetic_prepared, tmp_path_factory):
    folder = tmp_path_factory.mktemp("resilience")
    recipe = apply_overrides(load_recipe("synthetic-rgb"), SETTINGS)
    prepared = tiny_synthetic_prepared
    whole = train(recipe, prepared, folder / "whole", environ=NAN_AT_STEP_5)
    # Steps 1-5, rolled back to step 4 (ckpt-4), then the 6th step of this call: stop there.
    stopped = train(recipe, prepared, folder / "split", environ=NAN_AT_STEP_5, stop_after_steps=6)
    shutil.copytree(folder / "split", folder / "stopped")
    resumed = train(recipe, prepared, folder / "split", resume="latest", environ={})
    return {
        "folder": folder,
        "prepared": prepared,
        "whole": (whole, folder / "whole"),
        "stopped": (stopped, folder / "stopped"),
        "resumed": (resumed, folder / "split"),
    }


def test_a_nan_loss_rolls_back_to_the_last_checkpoint_and_the_run_finishes(runs):
    summary, run_dir = runs["whole"]
    assert summary.global_step == 9 and (run_dir / "final.weights.h5").is_file()
    (recovery,) = _metrics(run_dir, "recovery")
    assert recovery["global_step"] == 5 and recovery["reason"] == "loss nan"
    assert recovery["restored_step"] == 4 and recovery["checkpoint"] == "ckpt-4"
    assert recovery["skipped_batches"] == 1 and recovery["lr_scale"] == 0.5
    train_rows = _metrics(run_dir, "train")
    assert [row["global_step"] for row in train_rows] == [1, 2, 3, 4, 5, 5, 6, 7, 8, 9]
    assert np.isnan(train_rows[4]["loss"]) and all(
        np.isfinite(row["loss"]) for row in train_rows[5:]
    )
    # after the recovery the schedule's rate is halved (train.recovery_lr_factor=0.5)
    assert train_rows[5]["lr"] == pytest.approx(train_rows[4]["lr"] / 2)
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "finished" and record["recoveries"] == 1
    for values in _model_values(run_dir, "final"):
        assert values is None or np.all(np.isfinite(values))


def test_a_run_stopped_after_a_recovery_resumes_bit_exactly(runs):
    stopped, _ = runs["stopped"]
    resumed, split_dir = runs["resumed"]
    assert stopped.stopped_early and stopped.global_step == 5  # the redone step 5
    assert resumed.resumed_from.endswith("ckpt-5") and resumed.global_step == 9
    _assert_same_floats(_model_values(split_dir, "final"), _model_values(runs["whole"][1], "final"))


def test_best_weights_are_those_of_the_best_validation_on_the_held_out_videos(runs):
    _, run_dir = runs["whole"]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["holdout"]["split"] == "train" and record["holdout"]["num_videos"] == 8
    validations = _metrics(run_dir, "validation")
    assert [row["epoch"] for row in validations] == [0, 1, 2]
    assert {row["split"] for row in validations} == {"holdout"}
    assert all(row["num_examples"] == 8 for row in validations)  # never the test split
    best_row = max(validations, key=lambda row: row["accuracy"])  # the first of equals
    best = record["best"]
    assert (best["epoch"], best["global_step"]) == (best_row["epoch"], best_row["global_step"])
    assert best["accuracy"] == best_row["accuracy"]

    weights = _model_values(run_dir, "best")
    checkpoints = run_dir / "checkpoints"
    _assert_same_floats(
        weights, _checkpoint_floats(checkpoints / f"ckpt-{best['global_step']}", len(weights))
    )
    for row in validations:
        if row["global_step"] != best["global_step"]:
            other = _checkpoint_floats(checkpoints / f"ckpt-{row['global_step']}", len(weights))
            assert any(
                a is not None and not np.array_equal(a, b)
                for a, b in zip(weights, other, strict=True)
            )


def test_eval_and_export_pick_the_best_weights(runs, cli_runner, tmp_path):
    from actrec.export.writer import export_runs

    _, run_dir = runs["whole"]
    result = cli_runner("eval", run_dir, "--checkpoint", "best")
    assert result.exit_code == 0, result.output
    results = json.loads((run_dir / "eval" / "test-centre-best" / "results.json").read_text())
    assert results["checkpoint"] == "best" and results["split"] == "test"
    export_runs([run_dir], tmp_path / "export", model_format="keras", checkpoint="best")
    metadata = json.loads((tmp_path / "export" / "actrec.json").read_text())
    assert metadata["streams"][0]["weights"] == "best.weights.h5"


@pytest.mark.parametrize("damage", ["truncated", "bit-flipped"])
def test_a_damaged_train_shard_is_named_with_the_fix_and_the_checkpoints_are_kept(
    runs, damage, cli_runner, tmp_path
):
    run_dir = tmp_path / "run"
    shutil.copytree(runs["stopped"][1], run_dir)
    prepared = tmp_path / "prepared"
    shutil.copytree(runs["prepared"], prepared)
    (shard,) = sorted(prepared.glob("train-*.tfrecord"))
    data = bytearray(shard.read_bytes())
    if damage == "truncated":
        shard.write_bytes(bytes(data[: len(data) - 1000]))
        expected = [f"has {len(data) - 1000} bytes, the manifest records {len(data)}", "truncated"]
    else:
        # Format 2 reads only the records a clip needs: flip a bit inside every video's
        # header record (the record at its manifest offset), which every clip of it reads.
        manifest = json.loads((prepared / "manifest.json").read_text())
        for video in manifest["videos"]:
            if video["status"] == "ok" and video["shard"] == shard.name:
                data[video["offset"] + 12 + 4] ^= 0x10  # past the length and its CRC
        shard.write_bytes(bytes(data))
        expected = ["corrupted record at", "has the recorded size but another SHA-256"]
    before = folder_digests(run_dir / "checkpoints")

    result = cli_runner("train", "--workdir", run_dir, "--data", prepared, "--resume")
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())  # unwrapped
    assert "Traceback" not in text and str(shard) in text
    for fragment in [
        *expected,
        f"run `actrec inspect {prepared}`",
        "re-run the `actrec prepare` command",
        "re-makes only the damaged shards",
    ]:
        assert fragment in text, text
    assert folder_digests(run_dir / "checkpoints") == before
    assert not (run_dir / "final.weights.h5").exists()
