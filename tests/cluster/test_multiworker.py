"""Multi-worker training with real worker processes on localhost (launch_local_workers).

One two-worker launch trains several scenarios (tests/cluster/workers/train_tiny.py) and writes
each worker's final variables; a one-worker launch with the double batch is the
reference; a third launch crashes a worker on purpose.
"""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cli_processes import train_command

from actrec.cluster.launch import launch_local_workers, run_local_workers

pytestmark = pytest.mark.slow

WORKER = str(Path(__file__).resolve().parent / "workers" / "train_tiny.py")
GLOBAL_BATCH = 8
STEPS = 8
# Scenarios of the two-worker launch (tests/cluster/workers/train_tiny.py; SGD has momentum 0, but
# with rules=1: momentum 0.9, coupled L2 and learning-rate multipliers).
SCENARIOS = [
    "name=allreduce",
    "name=allreduce-accumulate,accumulation=2",
    "name=kavg1,sync=kavg,k=1",
    "name=allreduce-rules,rules=1,accumulation=2",
    "name=kavg1-rules,sync=kavg,k=1,rules=1,accumulation=2",
    "name=kavg4,sync=kavg,k=4",
    "name=allreduce-bn,bn=1",
    "name=kavg-adam-bn,sync=kavg,k=2,optimizer=adam,bn=1",
    "name=float16-bn,bn=1,precision=float16,optimizer=adam",
    # distilled from a frozen teacher of another width (a projection): every sync mode
    "name=distill,distill=1",
    "name=distill-kavg-adam,sync=kavg,k=2,optimizer=adam,distill=1,accumulation=2",
    "name=distill-float16,distill=1,precision=float16,optimizer=adam",
]
DISTILLED = SCENARIOS.index("name=distill,distill=1")
LAUNCH_TIMEOUT = 240.0


def launch(num_workers: int, out: Path, *arguments: str) -> None:
    output = io.StringIO()
    command = [
        sys.executable,
        WORKER,
        "--out",
        str(out),
        "--global-batch",
        str(GLOBAL_BATCH),
        "--steps",
        str(STEPS),
        *arguments,
    ]
    started = time.monotonic()
    code = launch_local_workers(
        num_workers, command, timeout=LAUNCH_TIMEOUT, output=output, grace_period=5
    )
    print(f"{num_workers}-worker launch: {time.monotonic() - started:.1f} s")
    assert code == 0, output.getvalue()[-4000:]


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("two-workers")
    scenarios = [argument for scenario in SCENARIOS for argument in ("--scenario", scenario)]
    launch(2, out, "--peer-timeout", "30", *scenarios)
    return out


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("one-worker")
    launch(1, out, "--scenario", SCENARIOS[0], "--scenario", SCENARIOS[DISTILLED])
    return out


def variables(folder: Path, name: str, worker: int, suffix: str = "") -> list[np.ndarray]:
    stored = np.load(folder / f"{name}-worker{worker}{suffix}.npz")
    return [stored[key] for key in stored.files]


def summary(folder: Path, name: str, worker: int) -> dict:
    return json.loads((folder / f"{name}-worker{worker}.json").read_text())


def max_relative_difference(first, second) -> float:
    return max(
        float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-12))
        for a, b in zip(first, second, strict=True)
    )


def test_allreduce_workers_finish_with_identical_weights(two_workers):
    first, second = variables(two_workers, "allreduce", 0), variables(two_workers, "allreduce", 1)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    assert summary(two_workers, "allreduce", 0)["replicas"] == 2
    assert summary(two_workers, "allreduce", 0)["num_traces"] == 1


def test_peer_timeout_sets_the_coordination_services_heartbeat_timeout(two_workers):
    """runtime.peer_timeout's value (30 s here) is the heartbeat timeout both workers'
    coordination service runs with (0 would be TensorFlow's default)."""
    for worker in (0, 1):
        assert summary(two_workers, "allreduce", worker)["heartbeat_timeout_ms"] == 30_000


def test_two_workers_equal_one_worker_with_the_double_batch(two_workers, one_worker):
    difference = max_relative_difference(
        variables(two_workers, "allreduce", 0), variables(one_worker, "allreduce", 0)
    )
    print(
        f"2 workers x {GLOBAL_BATCH // 2} vs 1 worker x {GLOBAL_BATCH}: max relative "
        f"difference {difference:.2e}"
    )
    assert difference <= 1e-5
    distributed, single = summary(two_workers, "allreduce", 1), summary(one_worker, "allreduce", 0)
    assert single["replicas"] == 1
    np.testing.assert_allclose(distributed["losses"], single["losses"], rtol=1e-5)
    assert distributed["evaluation"]["num_examples"] == GLOBAL_BATCH * STEPS
    assert distributed["evaluation"]["accuracy"] == single["evaluation"]["accuracy"]
    # the confusion matrix is summed over both workers' videos: the one worker's
    assert distributed["evaluation"]["confusion"] == single["evaluation"]["confusion"]
    assert sum(map(sum, distributed["evaluation"]["confusion"])) == GLOBAL_BATCH * STEPS
    assert distributed["evaluation"]["loss"] == pytest.approx(
        single["evaluation"]["loss"], rel=1e-5
    )


def test_accumulation_across_workers_gives_the_same_update(two_workers):
    difference = max_relative_difference(
        variables(two_workers, "allreduce-accumulate", 0), variables(two_workers, "allreduce", 0)
    )
    print(
        f"2 workers x 2 micro-batches of 2 vs 2 workers x 4: max relative difference "
        f"{difference:.2e}"
    )
    assert difference <= 1e-5
    assert summary(two_workers, "allreduce-accumulate", 0)["num_all_reduces"] == STEPS


def test_float16_with_loss_scaling_trains_identically_on_both_workers(two_workers):
    for a, b in zip(
        variables(two_workers, "float16-bn", 0),
        variables(two_workers, "float16-bn", 1),
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)
    losses = summary(two_workers, "float16-bn", 0)["losses"]
    assert all(np.isfinite(losses))


def test_kavg_with_one_step_equals_allreduce(two_workers):
    difference = max_relative_difference(
        variables(two_workers, "kavg1", 0), variables(two_workers, "allreduce", 0)
    )
    print(f"kavg K=1 vs allreduce: max relative difference {difference:.2e}")
    assert difference <= 1e-5
    assert summary(two_workers, "kavg1", 0)["num_all_reduces"] == STEPS


def test_kavg_with_one_step_equals_allreduce_with_momentum_coupled_l2_and_multipliers(
    two_workers,
):
    """Local momentum buffers average to the synchronous one, coupled L2 sees the same
    averaged weights, and the multipliers are linear: K = 1 still equals allreduce, with
    gradient accumulation on both."""
    kavg, allreduce = (
        variables(two_workers, name, 0) for name in ("kavg1-rules", "allreduce-rules")
    )
    difference = max_relative_difference(kavg, allreduce)
    print(f"kavg K=1 vs allreduce, momentum + coupled L2 + multipliers: {difference:.2e}")
    assert difference <= 1e-5
    plain = variables(two_workers, "allreduce", 0)
    assert len(allreduce) == len(plain) + 2  # the stem's kernel and bias
    for a, b in zip(kavg, variables(two_workers, "kavg1-rules", 1), strict=True):
        np.testing.assert_array_equal(a, b)


def test_kavg_with_four_steps_communicates_four_times_less(two_workers):
    allreduce_rounds = summary(two_workers, "allreduce", 0)["num_all_reduces"]
    kavg_rounds = [summary(two_workers, "kavg4", worker)["num_all_reduces"] for worker in (0, 1)]
    print(f"all-reduces over {STEPS} steps: allreduce {allreduce_rounds}, kavg K=4 {kavg_rounds}")
    assert allreduce_rounds == STEPS
    assert kavg_rounds == [STEPS // 4, STEPS // 4]
    for a, b in zip(
        variables(two_workers, "kavg4", 0), variables(two_workers, "kavg4", 1), strict=True
    ):
        np.testing.assert_array_equal(a, b)
    # The local steps really were local: the workers saw different losses, and the
    # result is not the synchronous one.
    losses = [summary(two_workers, "kavg4", worker)["losses"] for worker in (0, 1)]
    assert losses[0] != losses[1]
    assert (
        max_relative_difference(
            variables(two_workers, "kavg4", 0), variables(two_workers, "allreduce", 0)
        )
        > 1e-3
    )


def test_batch_norm_statistics_are_identical_after_synchronize(two_workers):
    before = [
        variables(two_workers, "allreduce-bn", worker, "-before-synchronize") for worker in (0, 1)
    ]
    # Each replica updates its own moving statistics from its own batches; the trainable
    # weights stay identical.
    assert max_relative_difference(before[0], before[1]) > 1e-4
    after = [variables(two_workers, "allreduce-bn", worker) for worker in (0, 1)]
    for a, b in zip(after[0], after[1], strict=True):
        np.testing.assert_array_equal(a, b)
    assert summary(two_workers, "allreduce-bn", 0)["num_all_reduces"] == STEPS + 1
    for a, b in zip(
        variables(two_workers, "kavg-adam-bn", 0),
        variables(two_workers, "kavg-adam-bn", 1),
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)
    evaluations = [summary(two_workers, "kavg-adam-bn", worker)["evaluation"] for worker in (0, 1)]
    assert evaluations[0] == evaluations[1]


def test_a_distilled_student_on_two_workers_equals_one_worker_with_the_double_batch(
    two_workers, one_worker
):
    """The student and its projection (actrec.train.distillation.loss) train on two workers as
    on one with the double batch; the teacher stays frozen and the projection is
    checkpointed."""
    distributed, single = variables(two_workers, "distill", 0), variables(one_worker, "distill", 0)
    plain = variables(two_workers, "allreduce", 0)
    assert len(distributed) == len(plain) + 2  # the projection's kernel and bias
    assert max_relative_difference(distributed, single) <= 1e-5
    for a, b in zip(distributed, variables(two_workers, "distill", 1), strict=True):
        np.testing.assert_array_equal(a, b)
    record, reference = summary(two_workers, "distill", 0), summary(one_worker, "distill", 0)
    np.testing.assert_allclose(record["losses"], reference["losses"], rtol=1e-5)
    np.testing.assert_allclose(record["feature_losses"], reference["feature_losses"], rtol=1e-5)
    assert all(loss > 0 for loss in record["feature_losses"])
    assert record["feature_losses"][-1] < record["feature_losses"][0]  # it learns the teacher's
    assert "distill_projection" in record["checkpoint_items"]


@pytest.mark.parametrize("name", ["distill-kavg-adam", "distill-float16"])
def test_distilled_kavg_and_float16_workers_end_identical(two_workers, name):
    after = [variables(two_workers, name, worker) for worker in (0, 1)]
    for a, b in zip(*after, strict=True):  # the projection averaged with the student
        np.testing.assert_array_equal(a, b)
    for worker in (0, 1):
        values = summary(two_workers, name, worker)
        assert np.isfinite(values["losses"]).all() and np.isfinite(values["feature_losses"]).all()


def test_a_crashing_worker_stops_the_other_without_hanging(tmp_path):
    output = io.StringIO()
    started = time.monotonic()
    result = run_local_workers(
        2,
        [
            sys.executable,
            WORKER,
            "--out",
            str(tmp_path),
            "--scenario",
            SCENARIOS[0],
            "--crash-worker",
            "1",
            "--crash-at-step",
            "1",
        ],
        timeout=LAUNCH_TIMEOUT,
        output=output,
        grace_period=2,
    )
    elapsed = time.monotonic() - started
    print(f"crash: launch returned {result.exit_code} after {elapsed:.1f} s")
    assert result.exit_code == 3 and result.failed_worker == 1, output.getvalue()[-4000:]
    assert not result.timed_out and elapsed < 90
    survivor = next(worker for worker in result.workers if worker.index == 0)
    assert survivor.stopped_by_launcher or survivor.exit_code != 0


def test_a_nan_loss_on_one_kavg_worker_rolls_both_back_and_the_run_finishes(
    tiny_synthetic_prepared, tmp_path, monkeypatch
):
    """`actrec train` on two real workers (K-step averaging, K = 2): worker 1's batch of
    step 3 is NaN (actrec.train.life.faults); its loss is its own until the averaging round, so
    the agreement collective must bring worker 0 back to the last checkpoint with it."""

    run_dir = tmp_path / "run"
    settings = [
        "model.backbone=test_mobilenet_v2",
        "data.crop_size=32",
        "data.num_segments=2",
        "train.batch_size=8",
        "train.epochs=2",
        "train.sync=kavg",
        "train.kavg_steps=2",
        "runtime.steps_per_epoch=3",
        "runtime.log_every_steps=1",
        "runtime.checkpoint_every_steps=2",
    ]
    monkeypatch.setenv("ACTREC_INJECT_NAN", "1:3")
    output = io.StringIO()
    command = train_command("synthetic-rgb", tiny_synthetic_prepared, run_dir, settings)
    code = launch_local_workers(2, command, timeout=LAUNCH_TIMEOUT, output=output, grace_period=5)
    text = output.getvalue()
    assert code == 0, text[-4000:]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "finished" and record["workers"] == 2
    assert record["global_step"] == 6 and record["recoveries"] == 1
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    (recovery,) = [row for row in rows if row["event"] == "recovery"]
    assert recovery["workers_diverged"] == 1 and recovery["global_step"] == 3
    assert recovery["reason"] == "the loss diverged on 1 other worker(s)"
    assert recovery["restored_step"] == 2 and recovery["checkpoint"] == "ckpt-2"
    # worker 0 (the chief) reports it in its log, and in its progress lines from then on
    assert "[worker 0] recovery 1/3: the loss diverged on 1 other worker(s) at epoch 1" in text
    assert any(
        line.startswith("[worker 0] epoch 2/2 ") and " recoveries 1 " in line
        for line in text.splitlines()
    ), text[-4000:]
    # had worker 1 not rolled back, its NaN weights would have reached the average
    import h5py

    with h5py.File(run_dir / "final.weights.h5", "r") as handle:
        arrays = []
        handle.visititems(
            lambda name, item: arrays.append(np.array(item)) if hasattr(item, "shape") else None
        )
    assert arrays and all(np.all(np.isfinite(array)) for array in arrays if array.dtype.kind == "f")
