"""The epochs of a run: the optimizer steps, checkpoints, preemption and divergence checks
of each epoch, then its validation.

Each epoch follows the adaptive schedule's plan (actrec.train.schedule.epoch_plan). Every
worker runs this; the chief alone writes metrics, the best weights and checkpoints kept.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from actrec.cluster.preemption import TerminationFlag
from actrec.runs.folder import BEST_WEIGHTS_FILE
from actrec.train.inputs.input_pipelines import (
    PhaseBatches,
    batch_phase_start,
    validation_dataset,
)
from actrec.train.life.checkpoint import Position, RunCheckpoints
from actrec.train.schedule import EpochPlan, epoch_plan, learning_rate

if TYPE_CHECKING:
    from actrec.cluster.strategy import ClusterInfo
    from actrec.config.recipe import Recipe
    from actrec.progress import Progress
    from actrec.train.inputs.training_data import TrainingData
    from actrec.train.life.best import BestWeights
    from actrec.train.life.divergence import DivergenceGuard
    from actrec.train.life.faults import NanInjection
    from actrec.train.life.metrics_log import MetricsLog
    from actrec.train.loop.trainer import DistributedTrainer


@dataclass
class StepBudget:
    """The optimizer steps one call of `train` may take (`limit`, None: no limit) and has
    taken."""

    limit: int | None = None
    taken: int = 0

    def take(self) -> None:
        self.taken += 1

    @property
    def spent(self) -> bool:
        return self.limit is not None and self.taken >= self.limit


@dataclass(frozen=True)
class Session:
    """The parts one call of `train` works with, complete when built (in actrec.train.run,
    once the checkpoint is restored); the parts keep their own state."""

    recipe: Recipe
    prepared_dir: Path
    data: TrainingData
    cluster: ClusterInfo
    trainer: DistributedTrainer  # its step: actrec/train/loop/step.py
    divergence: DivergenceGuard
    checkpoints: RunCheckpoints
    injection: NanInjection
    batches: PhaseBatches
    progress: Progress
    metrics: MetricsLog
    best: BestWeights
    budget: StepBudget = field(default_factory=StepBudget)
    termination: TerminationFlag = field(default_factory=TerminationFlag)


def run_epochs(session: Session, position: Position, summary) -> None:
    """Train from `position` to the last epoch, or until preempted or out of steps; fills
    `summary` (epochs_done, preempted, stopped_early, validation; an
    actrec.train.run.TrainSummary, untyped here because run.py imports this module)."""
    recipe, trainer = session.recipe, session.trainer
    replicas = trainer.num_replicas_in_sync
    for epoch in range(position.epoch, recipe.train.epochs):
        plan = epoch_plan(recipe.train, recipe.runtime, epoch, replicas, session.data.train_videos)
        first_step = position.step_in_epoch if epoch == position.epoch else 0
        if first_step == 0:
            _log_epoch_start(session, epoch, plan)
        if _train_epoch(session, epoch, plan, first_step, summary):
            break  # stopped mid-epoch
        summary.epochs_done = epoch + 1
        if summary.preempted:  # SIGTERM on an epoch's last step: its checkpoint is saved
            break
        every_validation = recipe.runtime.validate_every_epochs
        if (
            session.data.validation.split
            and every_validation
            and ((epoch + 1) % every_validation == 0 or epoch + 1 == recipe.train.epochs)
        ):
            _validate(session, epoch, plan, summary)
        if session.budget.spent:
            summary.stopped_early = epoch + 1 < recipe.train.epochs
            break


def _log_epoch_start(session: Session, epoch: int, plan: EpochPlan) -> None:
    session.metrics.write(
        "epoch",
        session.trainer.step,
        epoch=epoch,
        global_batch=plan.global_batch,
        per_replica_batch=plan.per_replica_batch,
        accumulation_steps=plan.accumulation_steps,
        steps_per_epoch=plan.steps_per_epoch,
        lr=learning_rate(session.recipe.train, epoch, 0, plan.steps_per_epoch),
    )


def _train_epoch(session: Session, epoch: int, plan: EpochPlan, first_step: int, summary) -> bool:
    """The optimizer steps of `epoch` from `first_step`; whether training stopped before the
    epoch's end (preempted or out of steps)."""
    recipe, trainer, divergence = session.recipe, session.trainer, session.divergence
    progress = session.progress
    batches = session.batches.for_epoch(epoch, plan, first_step)
    if session.batches.started_stream is not None:
        session.metrics.write("input", trainer.step, **session.batches.started_stream)
        session.batches.started_stream = None
    description = f"epoch {epoch + 1}/{recipe.train.epochs}"
    progress.start(description, plan.steps_per_epoch)
    stopped_mid_epoch = False
    progress.advance(first_step)
    step = first_step  # optimizer steps done in this epoch
    while step < plan.steps_per_epoch:
        rate = learning_rate(recipe.train, epoch, step, plan.steps_per_epoch)
        rate *= divergence.lr_scale
        step_started = time.monotonic()
        session.injection.arm(trainer.step + 1)
        values = trainer.train_step(next(batches), rate, plan.accumulation_steps)
        step += 1
        clips_per_second = plan.global_batch / max(time.monotonic() - step_started, 1e-9)
        session.budget.take()
        divergence.observe(values["loss"])
        _show_step(session, epoch, step, plan, values, rate, clips_per_second)
        budget_spent = session.budget.spent
        every = recipe.runtime.checkpoint_every_steps
        saving = budget_spent or (every > 0 and trainer.step % every == 0)
        saving = saving or step == plan.steps_per_epoch
        # kavg workers communicate only every K steps (and before a checkpoint); so do
        # the preemption and divergence checks.
        communicate = recipe.train.sync == "allreduce" or (
            trainer.step % recipe.train.kavg_steps == 0
        )
        stop, diverged = divergence.check(
            trainer, session.termination.raised, communicate, saving, session.cluster.num_workers
        )
        if diverged:
            where = {"epoch": epoch, "step": step, "workers": diverged}
            restored = divergence.roll_back(
                session.checkpoints,
                trainer,
                where,
                session.metrics,
                progress,
                session.data.info.num_classes,
            )
            step = restored.step_in_epoch
            progress.start(description, plan.steps_per_epoch)
            progress.advance(step)
            if not stop:
                continue  # else the recovery is checkpointed before stopping
        if saving or stop:
            end_of_epoch = step == plan.steps_per_epoch
            if end_of_epoch and batch_phase_start(recipe.train, epoch + 1) == epoch + 1:
                divergence.new_phase()  # the next epoch reads a new input stream
            saved = Position(epoch + 1, 0) if end_of_epoch else Position(epoch, step)
            session.checkpoints.save(saved, trainer.step)
        summary.preempted = summary.preempted or bool(stop)
        if (stop or budget_spent) and step < plan.steps_per_epoch:
            summary.stopped_early = not stop
            stopped_mid_epoch = True
            break
    progress.finish()
    return stopped_mid_epoch


def _show_step(
    session: Session,
    epoch: int,
    step: int,
    plan: EpochPlan,
    values: dict[str, float],
    rate: float,
    clips_per_second: float,
) -> None:
    """The step's progress line, and its metrics line every runtime.log_every_steps."""
    trainer = session.trainer
    # a distilled step's loss terms apart (actrec.train.distillation.loss)
    terms = {name: values[name] for name in ("cross_entropy", "feature_mse") if name in values}
    session.progress.advance(1, clips=plan.global_batch)
    session.progress.show(
        loss=values["loss"],
        **terms,
        accuracy=values["accuracy"],
        lr=rate,
        batch=plan.global_batch,
        **session.divergence.shown(),
    )
    if trainer.step % session.recipe.runtime.log_every_steps == 0:
        session.metrics.write(
            "train",
            trainer.step,
            epoch=epoch,
            step=step,
            loss=values["loss"],
            **terms,
            accuracy=values["accuracy"],
            lr=rate,
            global_batch=plan.global_batch,
            clips_per_second=clips_per_second,
        )


def _validate(session: Session, epoch: int, plan: EpochPlan, summary) -> None:
    """Validate after `epoch`, keep the best weights, log and show the result."""
    trainer, validation = session.trainer, session.data.validation
    eval_batch = max(1, plan.per_replica_batch)
    dataset = validation_dataset(session.prepared_dir, session.data, eval_batch)
    summary.validation = trainer.evaluate(trainer.distribute(dataset))
    summary.validation_confusion = summary.validation.pop("confusion")  # [K, K]
    is_best = session.best.update(
        trainer.model, epoch, trainer.step, validation.name, summary.validation
    )
    session.metrics.write(
        "validation",
        trainer.step,
        epoch=epoch,
        split=validation.name,
        **summary.validation,
    )
    session.progress.message(
        f"epoch {epoch + 1}: {validation.name} accuracy "
        f"{summary.validation['accuracy']:.3f}, loss {summary.validation['loss']:.4f}"
        + (f" (best so far: {BEST_WEIGHTS_FILE})" if is_best else "")
    )
