"""The built-in synthetic recipes learn what they should (real training, a few minutes).

The synthetic classes differ only in motion: the flow TSN must reach 90 % test accuracy; the
RGB TSM must learn the motion from the frames (75 %); K-step averaging on two real worker
processes must reach the flow target with 4x fewer all-reduces. The RGB TSN twin
(synthetic-rgb, measured at 7-11 %: docs/data.md) is not trained here: that it cannot
learn the classes follows from exact checks that need no training, a TSN's output does not
depend on the order of its frames (tests/models/test_models_segment_model.py) and neither a
single frame nor a clip's frames as a set tell the classes apart
(tests/data/test_synthetic.py); the suite saves its 512 steps (issue 37). The synthetic set
has no val split, so training validates on nothing (the test split is for evaluation
only): the accuracies are those of `actrec eval` on the test split.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from cli_processes import train_command

from actrec.cluster.launch import launch_local_workers
from actrec.config.files import load_recipe
from actrec.evaluation.evaluate import evaluate_run
from actrec.evaluation.protocols import resolve_protocol

pytestmark = pytest.mark.slow

# The flow TSN's target on two workers under K-step averaging, from the spread of both sync
# modes (docs/benchmarks.md, K-AVG; seeds 0-2): kavg K=4 94.6 / 92.9 / 94.6 % with AVX-512
# kernels and 78.6 / 89.3 / 87.5 % with ONEDNN_MAX_CPU_ISA=AVX2 (a CPU without AVX-512);
# allreduce 94.6 / 87.5 / 91.1 % and 80.4 / 89.3 / 89.3 %. Seed 0 is the low one of both
# modes under AVX2 kernels: the lowest run measured (78.6 %) less two test videos.
KAVG_TARGET = 0.75
# The RGB TSM's bound: 80.4-91.1 % test top-1 in ten seeds of its recipe (16 epochs, AMD EPYC
# with AVX-512) and 78.6 % in a run of this test (seed 0 again: the CPU kernels are not
# deterministic); docs/benchmarks.md, "Why the spread": it does not learn the direction of
# a rotation, so about 7 of 14 rotation videos are right by chance and a few others vary.
# The lowest less two test videos.
TSM_BOUND = 0.75


@pytest.fixture
def prepared(synthetic_prepared) -> Path:
    return synthetic_prepared


@pytest.fixture
def flow_run(synthetic_flow_run):
    return synthetic_flow_run


def _test_split_metrics(run_dir: Path, out_dir: Path):
    """top-1 and videos of the run's final weights on the test split (centre view)."""
    metrics = evaluate_run(run_dir, resolve_protocol("centre"), out_dir=out_dir).metrics
    return metrics.top1, metrics.num_videos


@pytest.fixture
def centre_metrics(synthetic_centre_evaluation):
    """run_dir -> (top-1, videos) of a session synthetic run, evaluated once per test run."""

    def metrics(run_dir: Path):
        evaluated = synthetic_centre_evaluation(run_dir).metrics
        return evaluated.top1, evaluated.num_videos

    return metrics


def test_flow_tsn_learns_the_motion_classes(flow_run, centre_metrics):
    summary, run_dir = flow_run
    top1, videos = centre_metrics(run_dir)
    assert videos == 56 and top1 >= 0.9
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "finished" and record["all_reduces"] == summary.global_step == 320
    # no val split: nothing validated during training (never the test split), no best weights
    assert record["validation"] == {} and "best" not in record
    assert '"event": "validation"' not in (run_dir / "metrics.jsonl").read_text()
    assert not (run_dir / "best.weights.h5").exists()


def test_tsm_learns_the_motion_and_its_tsn_twin_is_the_same_recipe_without_the_shift(
    synthetic_tsm_run, centre_metrics
):
    """synthetic-rgb is synthetic-tsm with model.architecture=tsn: what the TSM learns beyond
    chance comes from the temporal shift alone."""
    tsm, tsn = load_recipe("synthetic-tsm"), load_recipe("synthetic-rgb")
    assert tsm.model.architecture == "tsm" and tsn.model.architecture == "tsn"
    assert dataclasses.replace(tsn.model, architecture="tsm") == tsm.model
    assert (tsn.data, tsn.train, tsn.runtime) == (tsm.data, tsm.train, tsm.runtime)
    summary, run_dir = synthetic_tsm_run
    assert summary.global_step == 512  # 16 epochs of 32 steps
    tsm_top1, videos = centre_metrics(run_dir)
    print(f"synthetic set, test top-1: TSM {tsm_top1:.3f}")
    assert videos == 56
    assert tsm_top1 >= TSM_BOUND


def test_kavg_on_two_workers_reaches_the_target_with_four_times_fewer_all_reduces(
    prepared, tmp_path, flow_run
):
    """K-step averaging (K = 4) all-reduces once per 4 steps where allreduce does every step,
    in the recipe's 10 epochs, Adam's moments per worker (the default), and learns the flow
    as all-reduce does: the target is KAVG_TARGET (chance 12.5 %), set from both modes'
    measured spread on both kinds of CPU kernels."""
    run_dir = tmp_path / "kavg"
    command = train_command(
        "synthetic-flow", prepared, run_dir, ["train.sync=kavg", "train.kavg_steps=4"]
    )
    log = tmp_path / "workers.log"
    with open(log, "w") as output:
        code = launch_local_workers(2, command, timeout=600, output=output)
    assert code == 0, log.read_text()[-3000:]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "finished" and record["workers"] == 2
    assert record["global_step"] == 10 * 32
    assert record["all_reduces"] * 4 == record["global_step"]
    assert flow_run[0].num_all_reduces == flow_run[0].global_step == 320  # allreduce: every step
    assert _test_split_metrics(run_dir, tmp_path / "eval")[0] >= KAVG_TARGET
    assert not any((run_dir / ".worker-checkpoints").rglob("*.index"))  # scratch removed
