"""The recipe settings of the suite's tiny runs (tests/fixtures/tiny_runs.py), which tests
and benchmarks that train for a step or two reuse."""

from __future__ import annotations

TINY_RUN_SETTINGS = [
    "model.backbone=test_mobilenet_v2",
    "model.batch_norm_momentum=0.0",
    "data.crop_size=32",
    "data.num_segments=2",
    "train.batch_size=4",
    "train.epochs=1",
    "runtime.steps_per_epoch=1",
    "runtime.validate_every_epochs=0",
]
"""The tiny runs' recipe settings: the test network at 32 px, 2 segments, one step."""
