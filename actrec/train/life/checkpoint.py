"""Checkpoints of a training run: model, optimizer, step and schedule position.

Every worker takes part in every save (saving reads distributed variables); only the
chief's copy is kept in RUN/checkpoints, the others write to a scratch folder that is
deleted at once (TensorFlow's multi-worker checkpointing pattern). tf.train.CheckpointManager
writes each checkpoint under a new name and updates its index last, so a crash during a
save leaves the previous checkpoint usable.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from actrec.errors import ConfigError
from actrec.runs.folder import CHECKPOINT_DIR, SCRATCH_DIR


@dataclass(frozen=True)
class Position:
    """Where training stands: `epoch` (0-based) and optimizer steps done within it."""

    epoch: int
    step_in_epoch: int


class RunCheckpoints:
    """Save and restore the trainer's state together with the schedule position."""

    def __init__(
        self,
        run_dir: Path,
        items: dict,
        *,
        is_chief: bool,
        worker_index: int,
        keep: int = 3,
        num_classes: int,
    ):
        import tensorflow as tf

        self.epoch = tf.Variable(0, dtype=tf.int64, trainable=False, name="epoch")
        self.step_in_epoch = tf.Variable(0, dtype=tf.int64, trainable=False, name="step_in_epoch")
        self.num_classes = tf.Variable(
            num_classes, dtype=tf.int64, trainable=False, name="num_classes"
        )
        tracked = {name: item for name, item in items.items() if name != "model"}
        if "model" in items:
            # tf.train.Checkpoint does not reach every Keras 3 variable through the model
            # (the dropout seed generators' state is missed), so the model's variables are
            # tracked directly, as one list (tracking the model too would save them twice):
            # a resumed run then continues bit-exactly.
            tracked["model_state"] = [variable.value for variable in items["model"].variables]
        self.checkpoint = tf.train.Checkpoint(
            **tracked,
            epoch=self.epoch,
            step_in_epoch=self.step_in_epoch,
            num_classes=self.num_classes,
        )
        self.is_chief = is_chief
        self.directory = run_dir / CHECKPOINT_DIR
        if not is_chief:
            self.directory = run_dir / SCRATCH_DIR / f"worker-{worker_index}"
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, str(self.directory), max_to_keep=keep
        )
        self.chief_directory = run_dir / CHECKPOINT_DIR
        self.last_path: str | None = None  # the chief's checkpoint last saved or restored

    def save(self, position: Position, global_step: int) -> str | None:
        """Save now (every worker must call this at the same step); the chief's path."""
        self.epoch.assign(position.epoch)
        self.step_in_epoch.assign(position.step_in_epoch)
        path = self.manager.save(checkpoint_number=global_step)
        self.last_path = str(self.chief_directory / Path(path).name)
        if not self.is_chief:
            shutil.rmtree(self.directory, ignore_errors=True)
            return None
        return path

    def latest_path(self) -> str | None:
        """The newest checkpoint of the run (read from the chief's folder by every worker)."""
        import tensorflow as tf

        return tf.train.latest_checkpoint(str(self.chief_directory))

    def restore(self, path: str | None = None, *, expected_classes: int) -> Position:
        """Restore `path` (default: the latest); ConfigError when the class count differs."""
        import tensorflow as tf

        path = path or self.latest_path()
        if path is None:
            raise ConfigError(
                f"no checkpoint in {self.chief_directory} to resume from; start without --resume"
            )
        stored_classes = int(tf.train.load_variable(path, "num_classes/.ATTRIBUTES/VARIABLE_VALUE"))
        if stored_classes != expected_classes:
            raise ConfigError(
                f"checkpoint {path} was trained for {stored_classes} classes but the data has "
                f"{expected_classes}; resume with the data it was trained on, or train into a "
                "new --workdir"
            )
        self.checkpoint.restore(path).expect_partial()
        self.last_path = path
        return Position(int(self.epoch.numpy()), int(self.step_in_epoch.numpy()))
