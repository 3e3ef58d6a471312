"""The built-in synthetic recipes learn what they should (real training, a few minutes).

The synthetic classes differ only in motion: the flow TSN must reach 90 % test accuracy
while the RGB TSN stays near chance (1/8); the RGB TSM, the same recipe with temporal
shifts, must learn the motion from the frames (80 %); K-step averaging on two real worker
processes must reach the flow target with 4x fewer all-reduces.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from conftest import train_command

from actrec.config import load_recipe
from actrec.train.launch import launch_local_workers

pytestmark = pytest.mark.slow


@pytest.fixture
def prepared(synthetic_prepared) -> Path:
    return synthetic_prepared


@pytest.fixture
def flow_run(synthetic_flow_run):
    return synthetic_flow_run


def test_flow_tsn_learns_the_motion_classes(flow_run):
    summary, run_dir = flow_run
    assert summary.validation["num_examples"] == 56
    assert summary.validation["accuracy"] >= 0.9, summary.validation
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "finished" and record["all_reduces"] == summary.global_step == 320


def test_rgb_tsn_stays_near_chance(synthetic_rgb_run, flow_run):
    summary, _ = synthetic_rgb_run
    assert summary.global_step == 640  # 20 epochs of 32 steps
    assert summary.validation["accuracy"] <= 0.3, summary.validation  # chance: 0.125
    assert flow_run[0].validation["accuracy"] - summary.validation["accuracy"] >= 0.5


def test_tsm_learns_the_motion_that_the_same_recipe_as_a_tsn_cannot(
    synthetic_tsm_run, synthetic_rgb_run
):
    """synthetic-rgb is synthetic-tsm with model.architecture=tsn: one test run of each on the
    default synthetic set (the TSN's is the session's synthetic-rgb run)."""
    tsm, tsn = load_recipe("synthetic-tsm"), load_recipe("synthetic-rgb")
    assert tsm.model.architecture == "tsm" and tsn.model.architecture == "tsn"
    assert dataclasses.replace(tsn.model, architecture="tsm") == tsm.model
    assert (tsn.data, tsn.train, tsn.runtime) == (tsm.data, tsm.train, tsm.runtime)
    tsm_summary, tsn_summary = synthetic_tsm_run[0], synthetic_rgb_run[0]
    print(
        f"synthetic set, test top-1: TSM {tsm_summary.validation['accuracy']:.3f}, "
        f"TSN {tsn_summary.validation['accuracy']:.3f}"
    )
    assert tsm_summary.validation["num_examples"] == 56
    assert tsm_summary.validation["accuracy"] >= 0.8, tsm_summary.validation
    assert tsn_summary.validation["accuracy"] <= 0.3, tsn_summary.validation  # chance: 0.125


def test_kavg_on_two_workers_reaches_the_target_with_four_times_fewer_all_reduces(
    prepared, tmp_path, flow_run
):
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
    assert record["global_step"] == 320
    assert record["all_reduces"] * 4 == flow_run[0].num_all_reduces == 320
    assert record["validation"]["accuracy"] >= 0.9, record["validation"]
    assert not any((run_dir / ".worker-checkpoints").rglob("*.index"))  # scratch removed
