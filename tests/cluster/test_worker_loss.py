"""A cluster that loses nodes (issue 24): two real `actrec train` workers started by hand
with TF_CONFIG (as Slurm or Kubernetes start them, no launcher watching); one is killed,
later the other is frozen; each time the survivor stops with one message and the restart
status, and restarting with --resume continues the run, the last time on one worker (a
preemptible cluster that hands back fewer nodes): every epoch of the example stream it
trained on is the whole training split exactly once, on an odd split that two pipelines
cannot share equally."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from cli_processes import train_command

from actrec.cluster.launch import free_ports, worker_environments
from actrec.cluster.worker_loss import lost_tasks
from actrec.errors import RESTART_EXIT_CODE

SURVIVOR_LIMIT = 120  # seconds the survivor may take to notice (the bound)
STEPS = 60
SETTINGS = [
    "model.backbone=test_mobilenet_v2",
    "data.crop_size=32",
    "data.num_segments=2",
    "train.batch_size=4",
    "train.epochs=1",
    f"runtime.steps_per_epoch={STEPS}",
    "runtime.checkpoint_every_steps=4",
    "runtime.validate_every_epochs=0",
    "runtime.peer_timeout=3",  # a SIGSTOP noticed in 5 s (TensorFlow's 10 s timeout: 9-15 s)
]


@pytest.fixture(scope="module")
def odd_prepared(tiny_synthetic_prepared, tmp_path_factory) -> Path:
    """The tiny synthetic set without one training video: 15 training videos, RGB only."""
    from dataclasses import replace

    from actrec.data.prepare.dataset import prepare_dataset
    from actrec.data.prepare.encode_video import PrepareSettings
    from actrec.data.sources import list_videos

    listing = list_videos("synthetic", tiny_synthetic_prepared.parent / "raw")
    dropped = next(entry for entry in listing.entries if entry.split == "train")
    listing = replace(listing, entries=tuple(e for e in listing.entries if e is not dropped))
    out = tmp_path_factory.mktemp("odd") / "prepared"
    prepare_dataset(listing, out, PrepareSettings(frame_size="original", flow="none"), workers=1)
    return out


def test_tensorflow_messages_name_the_lost_task():
    message = (
        "Collective ops is aborted by: Socket closed\nAdditional GRPC error information from "
        "remote target /job:worker/replica:0/task:1: ... /job:worker/replica:0/task:0 ..."
    )
    assert lost_tasks(message, task_index=0) == ["worker 1"]
    assert lost_tasks(message, task_index=1) == ["worker 0"]
    assert lost_tasks("Socket closed", task_index=0) == []


def test_the_message_says_who_what_where_and_the_fix():
    from types import SimpleNamespace

    import tensorflow as tf

    from actrec.cluster.worker_loss import is_collective_failure, worker_lost_error

    error = tf.errors.UnavailableError(
        None,
        None,
        "Graph execution error:\n\nDetected at node CollectiveReduceV2 defined at ...\n"
        "Collective ops is aborted by: Socket closed /job:worker/replica:0/task:1",
    )
    assert is_collective_failure(error) and not is_collective_failure(ValueError("x"))
    cluster = SimpleNamespace(task_index=0, num_workers=2)
    message = str(worker_lost_error(error, cluster, 12, "runs/x/checkpoints/ckpt-8"))
    assert message.startswith("worker 0 of 2 lost worker 1 at step 12 (UnavailableError: ")
    assert "Collective ops is aborted by: Socket closed" in message
    assert "runs/x/checkpoints/ckpt-8, is intact" in message
    assert f"status {RESTART_EXIT_CODE} (restart me)" in message
    unnamed = str(worker_lost_error(error.__class__(None, None, "Socket closed"), cluster, 3, None))
    assert "lost a peer worker (TensorFlow does not say which)" in unnamed
    assert "no checkpoint was written yet" in unnamed


def _start(command, environments, logs: Path, name: str):
    workers = []
    for index, environment in enumerate(environments):
        log = open(logs / f"{name}-worker{index}.log", "w")  # noqa: SIM115  (closed below)
        process = subprocess.Popen(command, env=environment, stdout=log, stderr=subprocess.STDOUT)
        workers.append((process, log))
    return workers


def _wait_for_checkpoint(run_dir: Path, after: int, workers) -> None:
    """Until the chief's checkpoint record (what a resume reads) names a step beyond
    `after`: a checkpoint's files are written before the record, so a worker stopped in
    between resumes from the one before."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        record = run_dir / "checkpoints" / "checkpoint"
        latest = re.search(r'^model_checkpoint_path: "ckpt-(\d+)"', _text(record), re.MULTILINE)
        if latest and int(latest.group(1)) > after:
            return
        assert all(process.poll() is None for process, _ in workers), "a worker ended early"
        time.sleep(0.1)
    raise AssertionError("no checkpoint within 180 s")


def _text(path: Path) -> str:
    """The file's text, or "" while it does not exist."""
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


def _exit_of(process, limit: float) -> tuple[int, float]:
    started = time.monotonic()
    code = process.wait(timeout=limit)
    return code, time.monotonic() - started


def _close(workers) -> None:
    for process, log in workers:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.close()


@pytest.mark.slow
def test_a_killed_and_a_frozen_peer_stop_the_survivor_and_the_run_finishes_on_one_worker(
    odd_prepared, tmp_path
):
    run_dir = tmp_path / "run"
    command = train_command("synthetic-rgb", odd_prepared, run_dir, SETTINGS)
    ports = free_ports(2)
    environments = worker_environments(2, ports, {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})

    def survivor_stops(name, victim: int, sig, resume: bool):
        arguments = [*command, *(["--resume"] if resume else [])]
        workers = _start(arguments, environments, tmp_path, name)
        try:
            _wait_for_checkpoint(run_dir, after=0 if not resume else 4, workers=workers)
            os.kill(workers[victim][0].pid, sig)
            survivor = 1 - victim
            code, seconds = _exit_of(workers[survivor][0], SURVIVOR_LIMIT)
        finally:
            _close(workers)
        output = (tmp_path / f"{name}-worker{survivor}.log").read_text()
        print(f"{name}: worker {survivor} exited {code} {seconds:.0f} s after the signal")
        assert code == RESTART_EXIT_CODE, output[-3000:]
        assert f"worker {survivor} of 2 lost" in output
        assert "is intact" in output and "--resume" in output
        assert "Traceback" not in output, output[-3000:]
        return output

    # 1. worker 1 killed (a crash): worker 0, the chief, names it and exits 75
    killed = survivor_stops("killed", victim=1, sig=signal.SIGKILL, resume=False)
    assert "worker 1" in killed.split("lost", 1)[1][:80]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "worker-lost"
    # 2. restarted with --resume, then the chief frozen (a hung node): worker 1 stops
    survivor_stops("frozen", victim=0, sig=signal.SIGSTOP, resume=True)
    # 3. one node is left: resumed on one worker (same global batch), the run finishes
    single = subprocess.run(
        [*command, "--resume"], env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert single.returncode == 0, single.stdout[-3000:] + single.stderr[-3000:]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "finished" and record["global_step"] == STEPS
    assert record["workers"] == 1
    (change,) = record["worker_changes"]
    assert change["from"] == 2 and change["to"] == 1 and 4 < change["step"] < STEPS
    said = single.stdout + single.stderr
    assert f"resumed on 1 worker at step {change['step']}; the run trained on 2" in said
    _assert_each_epoch_is_the_split_once(run_dir, odd_prepared)


def _assert_each_epoch_is_the_split_once(run_dir: Path, prepared: Path) -> None:
    """The clips of every step the run kept, from the input streams its metrics log says
    each part of the run started (workers, first example), built by the trainer's own
    dataset function with the video ids: each epoch of them is the split once."""
    import tensorflow as tf

    from actrec.config.files import load_recipe
    from actrec.data.format.manifest import read_manifest
    from actrec.train.inputs.input_pipelines import epoch_seed, training_dataset
    from actrec.train.inputs.training_data import check_training_data

    recipe = load_recipe(run_dir / "recipe.yaml")
    data = check_training_data(recipe, prepared)
    batch = recipe.train.batch_size
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    starts = [row for row in rows if row["event"] == "input"]
    assert [row["input_pipelines"] for row in starts] == [2, 2, 1]
    ids = []
    for start, end in zip(starts, [*starts[1:], {"global_step": STEPS}], strict=True):
        pipelines, steps = start["input_pipelines"], end["global_step"] - start["global_step"]
        assert start["first_example"] == start["global_step"] * batch
        per_pipeline = []
        for index in range(pipelines):
            context = tf.distribute.InputContext(pipelines, index, pipelines)
            dataset = training_dataset(
                prepared, recipe, data, epoch_seed(recipe.runtime.seed, 0),
                batch // pipelines, start["global_step"], with_video_ids=True,
            )(context)  # fmt: skip
            per_pipeline.append([b[-1].numpy() for b in dataset.take(steps)])
        for step in range(steps):  # a step's batch: pipeline i holds examples i, i + n, ...
            batches = [pipeline[step] for pipeline in per_pipeline]
            ids += [video for pair in zip(*batches, strict=True) for video in pair]
    manifest = read_manifest(prepared)
    split = sorted(v["id"] for v in manifest["videos"] if v["split"] == "train")
    assert len(split) == 15 and len(ids) == STEPS * batch
    whole_epochs = len(ids) // len(split)
    for epoch in range(whole_epochs):
        chunk = ids[epoch * len(split) : (epoch + 1) * len(split)]
        assert sorted(video.decode() for video in chunk) == split, f"epoch {epoch}"
    rest = ids[whole_epochs * len(split) :]
    assert len(set(rest)) == len(rest)


def _children(pid: int) -> list[int]:
    """The process ids whose parent is `pid` (from /proc), in increasing order."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            children.append(int(stat.parent.name))
    return sorted(children)


@pytest.mark.slow
def test_launch_with_restarts_survives_a_killed_worker_and_finishes(
    tiny_synthetic_prepared, tmp_path
):
    import sys

    run_dir = tmp_path / "run"
    train = train_command("synthetic-rgb", tiny_synthetic_prepared, run_dir, SETTINGS)
    command = [sys.executable, "-m", "actrec_cli.main", "launch", "-n", "2", "--restarts", "1"]
    command += ["--grace-period", "2", "--", *train]
    log_path = tmp_path / "launch.log"
    with open(log_path, "w") as log:
        launcher = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_for_checkpoint(run_dir, after=0, workers=[(launcher, log)])
            workers = _children(launcher.pid)
            assert len(workers) == 2, workers
            os.kill(workers[-1], signal.SIGKILL)
            code = launcher.wait(timeout=300)
        finally:
            if launcher.poll() is None:
                launcher.kill()
    output = log_path.read_text()
    assert code == 0, output[-3000:]
    assert "failed with exit code 137" in output
    assert (
        "restart 1 of 1: worker" in output
        and "starting all 2 workers again with --resume" in output
    )
    assert "all 2 workers finished" in output
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "finished" and record["global_step"] == STEPS
