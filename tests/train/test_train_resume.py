"""Resuming late in a batch phase: bit-exact, and no clip the run already trained on is
decoded again (issue 13: resume time independent of where the run stopped)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cli_processes import train_command
from file_contents import weight_file_arrays

from actrec.cluster.launch import launch_local_workers
from actrec.config.files import load_recipe
from actrec.config.overrides import apply_overrides
from actrec.train.run import train

pytestmark = pytest.mark.slow

# Two batch phases: epoch 0 at a global batch of 8, epoch 1 at 16 in micro-batches of 8
# (gradient accumulation), 8 steps each.
PHASES = [
    "model.backbone=test_mobilenet_v2",
    "data.crop_size=32",
    "data.num_segments=2",
    "train.batch_size=8",
    "train.batch_growth=2",
    "train.batch_growth_every=1",
    "train.max_per_replica_batch=8",
    "train.epochs=2",
    "runtime.steps_per_epoch=8",
    "runtime.validate_every_epochs=0",
    "runtime.deterministic=true",
]


def _assert_same_weights(first: Path, second: Path) -> None:
    for mine, theirs in zip(weight_file_arrays(first), weight_file_arrays(second), strict=True):
        np.testing.assert_array_equal(mine, theirs)


def test_resume_at_step_6_of_an_8_step_phase_is_bit_exact_and_decodes_only_what_it_trains(
    tiny_synthetic_prepared, tmp_path
):
    recipe = apply_overrides(load_recipe("synthetic-rgb"), PHASES)
    stopped = train(recipe, tiny_synthetic_prepared, tmp_path / "resumed", stop_after_steps=14)
    assert stopped.stopped_early and stopped.global_step == 14  # epoch 1, step 6 of 8
    resumed = train(recipe, tiny_synthetic_prepared, tmp_path / "resumed", resume="latest")
    whole = train(recipe, tiny_synthetic_prepared, tmp_path / "whole")
    assert resumed.global_step == whole.global_step == 16
    _assert_same_weights(
        tmp_path / "resumed" / "final.weights.h5", tmp_path / "whole" / "final.weights.h5"
    )
    # The resumed call trains 2 steps of 16 clips; replaying its phase would decode the
    # 6 x 16 before them. What it decodes beyond 32 is the pipeline's read-ahead.
    print(f"clips decoded: resumed {resumed.clips_decoded}, whole run {whole.clips_decoded}")
    assert 32 <= resumed.clips_decoded < 32 + 6 * 16
    assert whole.clips_decoded >= 8 * 8 + 8 * 16


def test_two_kavg_workers_resume_late_in_a_phase_bit_exactly(tiny_synthetic_prepared, tmp_path):
    """K-step averaging on two real worker processes, with the phases above (each worker
    accumulates 2 micro-batches of 4 in the second): stopped at step 10 (epoch 1, step 4 of
    6, an averaging step), resumed, equal to the uninterrupted two-worker run."""
    settings = [
        *PHASES,
        "runtime.steps_per_epoch=6",
        "train.sync=kavg",
        "train.kavg_steps=2",
        # averaged Adam moments: a checkpoint then holds every worker's state (with the
        # default "local" moments it holds the chief's, and a resume is not bit-exact)
        "train.adam_state=average",
        "train.max_per_replica_batch=4",
    ]

    def launch(run_dir: Path, *extra: str) -> None:
        command = train_command("synthetic-rgb", tiny_synthetic_prepared, run_dir, settings)
        log = tmp_path / f"{run_dir.name}.log"
        with open(log, "a") as output:
            code = launch_local_workers(2, [*command, *extra], timeout=300, output=output)
        assert code == 0, log.read_text()[-3000:]

    launch(tmp_path / "resumed", "--stop-after-steps", "10")
    launch(tmp_path / "resumed", "--resume")
    launch(tmp_path / "whole")
    _assert_same_weights(
        tmp_path / "resumed" / "final.weights.h5", tmp_path / "whole" / "final.weights.h5"
    )
