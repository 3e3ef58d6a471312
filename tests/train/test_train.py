"""`actrec train` end to end on a tiny prepared set: schedule, resume, preemption, errors."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from cli_processes import train_command
from file_contents import weight_file_arrays
from repo_paths import REPO_ROOT

from actrec.config.files import load_recipe
from actrec.config.overrides import apply_overrides
from actrec.errors import ConfigError, DatasetError, OutputError
from actrec.train.run import train

TINY = [
    "model.backbone=test_mobilenet_v2",
    "data.crop_size=32",
    "data.num_segments=2",
    "train.batch_size=8",
    "train.epochs=2",
    "runtime.steps_per_epoch=3",
    "runtime.log_every_steps=1",
    "runtime.validate_every_epochs=1",
]


@pytest.fixture(scope="module")
def prepared(tiny_synthetic_prepared) -> Path:
    """8 classes x 3 videos (2 train, 1 test) of 12 frames at 64x48, with flow."""
    return tiny_synthetic_prepared


def _recipe(*overrides: str, base: str = "synthetic-rgb"):
    return apply_overrides(load_recipe(base), [*TINY, *overrides])


def _metrics(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_adaptive_batch_schedule_is_logged_and_survives_a_resume(prepared, tmp_path):
    adaptive = [
        "train.batch_size=4",
        "train.batch_growth=2",
        "train.batch_growth_every=1",
        "train.max_batch_size=16",
        "train.lr_coupling=linear",
        "train.lr=0.001",
        "train.decay=none",
        "train.epochs=3",
        "runtime.steps_per_epoch=2",
        "runtime.validate_every_epochs=0",
        "runtime.deterministic=true",
    ]
    recipe = _recipe(*adaptive)
    interrupted = train(recipe, prepared, tmp_path / "split", stop_after_steps=3)
    assert interrupted.stopped_early and interrupted.global_step == 3  # mid-epoch 2
    resumed = train(recipe, prepared, tmp_path / "split", resume="latest")
    assert resumed.resumed_from.endswith("ckpt-3") and resumed.global_step == 6
    rows = _metrics(tmp_path / "split")
    epochs = [row for row in rows if row["event"] == "epoch"]
    assert [row["epoch"] for row in epochs] == [0, 1, 2]
    assert [row["global_batch"] for row in epochs] == [4, 8, 16]
    assert [row["lr"] for row in epochs] == pytest.approx([0.001, 0.002, 0.004])
    steps = [row for row in rows if row["event"] == "train"]
    assert [row["global_step"] for row in steps] == [1, 2, 3, 4, 5, 6]
    assert [row["global_batch"] for row in steps] == [4, 4, 8, 8, 16, 16]
    assert [row["lr"] for row in steps] == pytest.approx([0.001] * 2 + [0.002] * 2 + [0.004] * 2)
    record = json.loads((tmp_path / "split" / "run.json").read_text())
    assert record["status"] == "finished" and record["global_step"] == 6


@pytest.mark.slow
def test_sigkill_mid_epoch_then_resume_matches_an_uninterrupted_run(prepared, tmp_path):
    # Steps of the test network take about 30 ms: 20 steps between the checkpoint the test
    # waits for and the end leave the kill a window of about half a second.
    overrides = [
        "train.epochs=2",
        "runtime.steps_per_epoch=24",
        "runtime.checkpoint_every_steps=4",
        "runtime.deterministic=true",
        "runtime.validate_every_epochs=0",
        "model.dropout=0.5",
    ]
    killed = tmp_path / "killed"
    command = train_command("synthetic-rgb", prepared, killed, [*TINY, *overrides])
    process = subprocess.Popen(
        command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and process.poll() is None:
        state = killed / "checkpoints" / "checkpoint"  # CheckpointManager's commit point
        if state.exists() and '"ckpt-28"' in state.read_text():  # epoch 2, step 4 of 24
            break
        time.sleep(0.01)
    assert process.poll() is None, process.stderr.read().decode()[-2000:]
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert not (killed / "final.weights.h5").exists()
    recipe = _recipe(*overrides)
    resumed = train(recipe, prepared, killed, resume="latest")
    assert resumed.resumed_from and "ckpt-" in resumed.resumed_from
    assert 28 <= int(resumed.resumed_from.rsplit("-", 1)[1]) < 48
    whole = train(recipe, prepared, tmp_path / "whole")
    assert resumed.global_step == whole.global_step == 48
    for mine, theirs in zip(
        weight_file_arrays(killed / "final.weights.h5"),
        weight_file_arrays(tmp_path / "whole" / "final.weights.h5"),
        strict=True,
    ):
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=0)
    train_steps = [r["global_step"] for r in _metrics(killed) if r["event"] == "train"]
    assert train_steps == list(range(1, 49))  # no step logged twice after the resume


def test_no_shards_at_the_data_path(tmp_path):
    with pytest.raises(DatasetError, match=r"no manifest\.json.*actrec prepare"):
        train(_recipe(), tmp_path, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_checkpoint_with_another_class_count_is_refused(prepared, tmp_path):
    run_dir = tmp_path / "run"
    train(
        _recipe("train.epochs=1", "runtime.steps_per_epoch=1"),
        prepared,
        run_dir,
        stop_after_steps=1,
    )
    manifest_path = prepared / "manifest.json"
    original = manifest_path.read_text()
    manifest = json.loads(original)
    try:
        manifest["classes"] = manifest["classes"] + ["Extra"]
        manifest_path.write_text(json.dumps(manifest))
        with pytest.raises(
            ConfigError, match=r"8 trained, 9 in the data; the data adds \['Extra'\], lacks none"
        ):
            train(
                _recipe("train.epochs=1", "runtime.steps_per_epoch=1"),
                prepared,
                run_dir,
                resume="latest",
            )
    finally:
        manifest_path.write_text(original)


def test_an_existing_run_is_never_overwritten(prepared, tmp_path):
    run_dir = tmp_path / "run"
    recipe = _recipe(
        "train.epochs=1", "runtime.steps_per_epoch=1", "runtime.validate_every_epochs=0"
    )
    train(recipe, prepared, run_dir)
    before = (run_dir / "final.weights.h5").read_bytes()
    with pytest.raises(OutputError, match=r"already holds a training run.*--resume"):
        train(recipe, prepared, run_dir)
    with pytest.raises(ConfigError, match=r"different recipe.*train\.lr"):
        train(apply_overrides(recipe, ["train.lr=0.5"]), prepared, run_dir, resume="latest")
    assert (run_dir / "final.weights.h5").read_bytes() == before


def test_cli_errors_are_clear(prepared, tmp_path, cli_runner, monkeypatch):
    result = cli_runner(
        "train",
        "--recipe",
        "synthetic-rgb",
        "--data",
        prepared,
        "--workdir",
        tmp_path / "run",
        "--set",
        "train.batch_size=zero",
    )
    assert result.exit_code == 1 and "train.batch_size" in result.output
    assert "Traceback" not in result.output
    monkeypatch.setenv("TF_CONFIG", "{not json")
    result = cli_runner(
        "train", "--recipe", "synthetic-rgb", "--data", prepared, "--workdir", tmp_path / "run"
    )
    assert result.exit_code == 1 and "TF_CONFIG" in result.output
    assert not (tmp_path / "run").exists()
    monkeypatch.delenv("TF_CONFIG")
    result = cli_runner("train", "--data", prepared, "--workdir", tmp_path / "run")
    assert result.exit_code == 1 and "--recipe" in result.output


@pytest.mark.slow
def test_sigterm_checkpoints_mid_epoch_exits_143_and_resumes(prepared, tmp_path):
    run_dir = tmp_path / "run"
    overrides = [  # 150 steps of the test network: about 5 s to stop it in
        "train.epochs=1",
        "runtime.steps_per_epoch=150",
        "runtime.validate_every_epochs=0",
    ]
    command = train_command("synthetic-rgb", prepared, run_dir, [*TINY, *overrides])
    process = subprocess.Popen(
        command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 240
    metrics = run_dir / "metrics.jsonl"
    while time.monotonic() < deadline and process.poll() is None:
        if metrics.exists() and '"global_step": 3,' in metrics.read_text():
            break
        time.sleep(0.02)
    assert process.poll() is None, process.stdout.read().decode()[-2000:]
    process.send_signal(signal.SIGTERM)
    output = process.communicate(timeout=120)[0].decode()
    assert process.returncode == 143, output[-2000:]
    assert "preempted" in output and "--resume" in output
    # TensorFlow's CUDA probe ("failed call to cuInit" on a CPU machine) is not shown.
    assert "cuInit" not in output and "E0000" not in output, output[:2000]
    # Piped output gets whole plain lines at the log interval (1 step), every field present.
    progress_line = re.compile(
        r"^epoch 1/1 (\d+)/150 \(\d+%\) [\d.]+ steps/s [\d.]+ clips/s loss [\d.]+ accuracy "
        r"[\d.]+ lr [\d.e-]+ batch 8 elapsed \d+:\d\d:\d\d ETA \d+:\d\d:\d\d$"
    )
    lines = [line for line in output.splitlines() if line.startswith("epoch 1/1 ")]
    assert all(progress_line.match(line) for line in lines), output[-3000:]
    assert [int(progress_line.match(line)[1]) for line in lines][:3] == [1, 2, 3]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "preempted" and 3 <= record["global_step"] < 150
    assert (run_dir / "checkpoints" / f"ckpt-{record['global_step']}.index").exists()
    assert not (run_dir / "final.weights.h5").exists()
    resumed = train(_recipe(*overrides), prepared, run_dir, resume="latest")
    assert resumed.global_step == 150 and resumed.resumed_from.endswith(
        f"ckpt-{record['global_step']}"
    )
    assert json.loads((run_dir / "run.json").read_text())["status"] == "finished"
