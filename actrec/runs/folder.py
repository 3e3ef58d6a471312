"""The run folder `actrec train` writes: its file names, and weights saved atomically.

    RUN/recipe.yaml        the resolved recipe (what `--resume` continues)
    RUN/run.json           data folder, classes, status, final metrics, the batch decision,
                           the validation hold-out and the best validation
    RUN/checkpoints/       model, optimizer, step and schedule position (tf.train.CheckpointManager)
    RUN/metrics.jsonl      one JSON object per logged step, epoch, validation and recovery
    RUN/tensorboard/       TensorBoard events
    RUN/final.weights.h5   the trained weights (rebuild the model from recipe.yaml)
    RUN/best.weights.h5    the weights of the best validation top-1 (actrec.train.life.best)

Training (actrec.train.run), evaluation and export (actrec.runs.trained) name these files
through this module; only the chief worker writes them. run.json is read and written by
actrec.runs.record (RunRecord).
"""

from __future__ import annotations

import os
from pathlib import Path

from actrec.files.atomic import commit_temporary

RECIPE_FILE = "recipe.yaml"
RUN_FILE = "run.json"
METRICS_FILE = "metrics.jsonl"
TENSORBOARD_DIR = "tensorboard"
FINAL_WEIGHTS_FILE = "final.weights.h5"
BEST_WEIGHTS_FILE = "best.weights.h5"
CHECKPOINT_DIR = "checkpoints"
SCRATCH_DIR = ".worker-checkpoints"  # the checkpoints of the non-chief workers, deleted at once


def save_weights_atomically(model, path: Path) -> Path:
    """model.save_weights to a temporary name in the same folder, then rename (atomic).

    Keras only writes a name ending in .weights.h5, so the temporary name is made here
    rather than by actrec.files.atomic.temporary_path; the rename is actrec.files.atomic's."""
    temporary = path.with_name(f".{path.name.removesuffix('.weights.h5')}.tmp.weights.h5")
    try:
        model.save_weights(str(temporary))
        commit_temporary(temporary, path)
    finally:
        if temporary.exists():
            os.remove(temporary)
    return path
