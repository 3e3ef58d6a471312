"""Divergence recovery: roll every worker back to the last good checkpoint and go on.

Learned from TF Model Garden's `Recovery` (official/core/base_trainer.py, 2020-21: a NaN
loss, or one above `loss_upper_bound`, restores the latest checkpoint; after
`recovery_max_trials` it raises; the input iterator is not rewound) and PySlowFast's
`KILL_LOSS_EXPLOSION_FACTOR` (slowfast/utils/meters.py: a loss above factor x the mean of
the 5 before it ends the run). actrec:

- detects (`observe`): a non-finite loss; one above train.loss_upper_bound; one above
  train.loss_explosion_factor x the mean of the last 5 good ones;
- agrees: every worker's verdict reaches every worker in ONE collective (a SUM of
  [stop requested, diverged]) at the steps where workers communicate anyway: every step
  under allreduce (where the loss is already global), every K-th step under kavg (a worker's
  loss is its own until the K-step average), and before every checkpoint;
- never writes a diverged checkpoint: before a save the synchronized weights must be finite,
  so the latest checkpoint is always a good one to return to;
- recovers (`roll_back`): every worker restores the latest checkpoint and keeps drawing
  batches where its input stream stands, so the batches from that checkpoint to the
  divergence are skipped; their number is kept in the checkpoint ("data_skip", with the
  recovery count) so a resumed run positions its data the same way. The learning rate is
  multiplied by train.recovery_lr_factor after each recovery;
- stops after train.max_recoveries recoveries with a DivergenceError (checkpoints kept).
Every recovery is a "recovery" row in metrics.jsonl and a line of the progress output.
"""

from __future__ import annotations

import math
from collections import deque
from pathlib import Path

from actrec.cluster.collectives import agreed_counts
from actrec.errors import DivergenceError

RECENT_LOSSES = 5  # PySlowFast compares with the mean of the 5 losses before


def weights_are_finite(model) -> bool:
    """Whether every float variable of `model` is finite (no NaN / inf)."""
    import tensorflow as tf

    return all(
        bool(tf.reduce_all(tf.math.is_finite(variable.value)))
        for variable in model.variables
        if tf.as_dtype(variable.dtype).is_floating
    )


class DivergenceGuard:
    """Detection, agreement state and rollback of one training process (see the module
    docstring). `train_config`: the recipe's TrainConfig."""

    def __init__(self, train_config):
        import tensorflow as tf

        self.upper_bound = train_config.loss_upper_bound
        self.explosion_factor = train_config.loss_explosion_factor
        self.max_recoveries = train_config.max_recoveries
        self.lr_factor = train_config.recovery_lr_factor
        # [recoveries so far, batches skipped in the current batch phase], checkpointed.
        self.state = tf.Variable([0, 0], dtype=tf.int64, trainable=False, name="divergence")
        self.reason: str | None = None  # this worker's divergence not yet agreed on
        self._recent: deque[float] = deque(maxlen=RECENT_LOSSES)

    @property
    def enabled(self) -> bool:
        """Whether a divergence rolls back (else it stops the run at once)."""
        return self.max_recoveries > 0

    @property
    def recoveries(self) -> int:
        return int(self.state[0].numpy())

    @property
    def data_skip(self) -> int:
        """Batches of the current batch phase skipped by recoveries (a resume skips them too)."""
        return int(self.state[1].numpy())

    @property
    def lr_scale(self) -> float:
        return self.lr_factor**self.recoveries

    def checkpoint_items(self) -> dict:
        return {"divergence": self.state}

    def shown(self) -> dict:
        """Values for the progress line: the recoveries so far, once there are any."""
        return {"recoveries": self.recoveries} if self.recoveries else {}

    def new_phase(self) -> None:
        """A new batch phase starts a new input stream: nothing of it is skipped yet."""
        self.state.assign([self.recoveries, 0])

    def observe(self, loss: float) -> None:
        """Judge one step's loss (this worker's under kavg, the global one under allreduce)."""
        if self.reason is not None:
            return
        if not math.isfinite(loss):
            self.reason = f"loss {loss}"
        elif self.upper_bound is not None and loss > self.upper_bound:
            self.reason = f"loss {loss:.4g} above train.loss_upper_bound={self.upper_bound:g}"
        elif (
            self.explosion_factor is not None
            and len(self._recent) == RECENT_LOSSES
            and loss > self.explosion_factor * sum(self._recent) / RECENT_LOSSES
        ):
            mean = sum(self._recent) / RECENT_LOSSES
            self.reason = (
                f"loss {loss:.4g} above train.loss_explosion_factor={self.explosion_factor:g} "
                f"x {mean:.4g} (the mean of the last {RECENT_LOSSES})"
            )
        else:
            self._recent.append(loss)

    def check(
        self, trainer, stop_requested: bool, communicate: bool, saving: bool, num_workers: int
    ) -> tuple[int, int]:
        """(workers asking to stop, workers diverged), the same on every worker.

        communicate / saving: whether the workers exchange values at this step / save a
        checkpoint after it (then also the trainer is synchronized and its weights must be
        finite). Every worker calls this after every step with the same flags."""
        stop = diverged = 0
        if communicate or saving:
            flags = [stop_requested, self.reason is not None]
            stop, diverged = agreed_counts(trainer.strategy, flags, num_workers)
        if (saving or stop) and not diverged:
            trainer.synchronize()
            if not weights_are_finite(trainer.model):  # the same on every worker now
                self.reason = self.reason or "non-finite weights"
                diverged = num_workers
        return stop, diverged

    def roll_back(self, checkpoints, trainer, where: dict, metrics, progress, expected_classes):
        """Restore the latest checkpoint on this worker (every worker calls this at the same
        step) and return its Position; DivergenceError when no recovery is left.

        where: epoch (0-based) and step (done in the epoch) of the divergence, and
        workers (how many workers diverged) for the messages."""
        global_step = trainer.step
        reason = self.reason or f"the loss diverged on {where['workers']} other worker(s)"
        latest = checkpoints.last_path
        place = f"epoch {where['epoch'] + 1}, step {where['step']}, global step {global_step}"
        if not self.enabled or self.recoveries >= self.max_recoveries or latest is None:
            raise DivergenceError(_stop_message(reason, place, self, checkpoints, latest))
        recoveries, skipped = self.recoveries + 1, self.data_skip
        position = checkpoints.restore(latest, expected_classes=expected_classes)
        self.state.assign([recoveries, skipped + global_step - trainer.step])
        self.reason = None
        self._recent.clear()
        metrics.write(
            "recovery",
            global_step,
            epoch=where["epoch"],
            step=where["step"],
            reason=reason,
            workers_diverged=where["workers"],
            restored_step=trainer.step,
            checkpoint=Path(latest).name,
            recoveries=recoveries,
            skipped_batches=global_step - trainer.step,
            lr_scale=self.lr_scale,
        )
        rate = f", learning rate x{self.lr_scale:g}" if self.lr_scale != 1 else ""
        skipped = global_step - trainer.step
        progress.message(
            f"recovery {recoveries}/{self.max_recoveries}: {reason} at {place}; rolled back to "
            f"{Path(latest).name} (global step {trainer.step}), skipping the {skipped} "
            f"batch{'es' if skipped != 1 else ''} since{rate}"
        )
        return position


def _stop_message(reason: str, place: str, guard: DivergenceGuard, checkpoints, latest) -> str:
    if not guard.enabled:
        used = "train.max_recoveries is 0"
    elif latest is None:
        used = "there is no checkpoint to return to"
    else:
        used = f"all train.max_recoveries={guard.max_recoveries} recoveries are used"
    kept = (
        f"The checkpoints in {checkpoints.chief_directory} are kept (the last good one: "
        f"{Path(latest).name}). "
        if latest
        else ""
    )
    return (
        f"training diverged ({reason} at {place}) and {used}: stopped. {kept}Train again into "
        "a new --workdir with a lower train.lr, train.recovery_lr_factor below 1 or a "
        "train.clip_norm; metrics.jsonl lists every recovery"
    )
