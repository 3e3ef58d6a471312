"""One training run: recipe + prepared data -> a run directory with a trained model.

The run folder's files are listed in actrec.runs.folder. Validation never reads the test split
(actrec.train.inputs.validation); a diverging loss rolls every worker back to the last checkpoint
(actrec.train.life.divergence); shard sizes are checked at start and a read error names the
damaged shard (actrec.data.format.integrity).

The strategy is created first, before any TensorFlow op (multi-worker collectives require
it). Every worker runs `train`; only the chief writes the run directory. Each batch-size
phase of the schedule reads its own input pipeline, seeded by its first epoch, so a
resumed run sees exactly the batches it would have seen; it starts the pipeline at its
position without reading the clips before it (actrec.train.inputs.input_pipelines).

A run started from another (model.weights "run:PATH") takes the source's settings without
weights (the temporal shift, the preprocessing) unless `given_settings` names them, and
recipe.yaml holds them (actrec.train.start.source_settings).

train.batch_size / train.max_per_replica_batch "auto" are resolved before the model is built
(actrec.train.memory.auto_batch): the chief probes, every worker receives the numbers, recipe.yaml
holds them, and a resumed run reuses them without probing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from actrec.errors import DivergenceError
from actrec.progress import NullProgress, Progress
from actrec.runs.folder import FINAL_WEIGHTS_FILE, save_weights_atomically

if TYPE_CHECKING:
    import numpy as np

    from actrec.train.life.checkpoint import Position
    from actrec.train.life.epochs import Session
    from actrec.train.memory.decision import BatchDecision

__all__ = ["TrainSummary", "train"]


@dataclass
class TrainSummary:
    """What a call of `train` did."""

    run_dir: Path
    epochs_done: int
    global_step: int
    validation: dict = field(default_factory=dict)
    validation_confusion: np.ndarray | None = None  # int [K, K] of the last validation
    preempted: bool = False
    stopped_early: bool = False
    resumed_from: str | None = None
    elapsed_seconds: float = 0.0
    num_all_reduces: int = 0
    weights_path: Path | None = None
    batch_decision: BatchDecision | None = None  # when probed
    clips_decoded: int = 0  # training clips this process's input pipelines decoded


def train(
    recipe,
    prepared_dir: Path | str,
    run_dir: Path | str,
    *,
    resume: str | None = None,
    progress: Progress | None = None,
    stop_after_steps: int | None = None,
    environ=None,
    memory_budget: int | None = None,
    on_batch_decision: Callable[[BatchDecision], None] | None = None,
    given_settings: Collection[str] = (),
) -> TrainSummary:
    """Train `recipe` on `prepared_dir` into `run_dir` (every worker calls this).

    resume: None (a new run), "latest" (continue the run in run_dir from its newest
    checkpoint; a new run when there is none yet) or a checkpoint path.
    stop_after_steps: checkpoint and return after this many optimizer steps in this call.
    memory_budget: bytes a probed batch may use (train.batch_size=auto or
    train.max_per_replica_batch=auto); None: actrec.train.memory.default_memory_budget.
    on_batch_decision: called with the actrec.train.memory.BatchDecision once the chief has
    probed (before training starts), e.g. to print its table.
    given_settings: the recipe settings ("section.key") the command line gave (`--set`): a
    run started from another keeps these, and takes the source's for the other settings
    without weights (actrec.train.start.source_settings); a recipe file's own values do not count.
    """
    from actrec.cluster.strategy import cluster_from_environment

    started = time.monotonic()
    progress = progress or NullProgress()
    prepared_dir, run_dir = Path(prepared_dir), Path(run_dir)
    cluster = cluster_from_environment(environ)
    strategy = _started_strategy(recipe, environ)

    from actrec.config.validate import validate_recipe
    from actrec.train.inputs.training_data import check_training_data, with_teacher
    from actrec.train.life.resume import open_run_directory, restore_position, starts_afresh
    from actrec.train.life.run_record import start_run_folder
    from actrec.train.start.starting_point import (
        load_starting_weights,
        recipe_from_source,
        starting_point,
        training_recipe,
    )

    validate_recipe(recipe)
    data = check_training_data(recipe, prepared_dir)
    requested = recipe
    recipe, has_run, previous = open_run_directory(
        strategy, recipe, cluster, run_dir, resume, given_settings, data.info.classes
    )
    start = starting_point(recipe, data.info.classes, previous, given_settings)
    recipe = recipe_from_source(recipe, start)
    validate_recipe(recipe)
    data = with_teacher(data, recipe, previous)  # a flow teacher, checked before any write
    recipe, decision = _decided_batch(
        strategy, requested, recipe, cluster, has_run, data, memory_budget, progress
    )
    if decision is not None and on_batch_decision is not None:
        on_batch_decision(decision)
    if cluster.is_chief:
        start_run_folder(
            run_dir, recipe, prepared_dir, data, cluster, has_run, decision, previous, start
        )
    if data.teacher is not None:
        progress.message(data.teacher.describe())
        if data.teacher.note and not has_run:
            progress.message(data.teacher.note)
    session = _session(
        strategy,
        training_recipe(recipe, start),
        prepared_dir,
        run_dir,
        data,
        cluster,
        environ,
        progress,
    )
    session.stop_after_steps = stop_after_steps
    trainer = session.trainer
    if start is not None and starts_afresh(session.checkpoints, resume):
        for line in load_starting_weights(trainer.model, start, recipe, data.info.classes):
            progress.message(line)
    position, resumed_from = restore_position(
        session.checkpoints, resume, trainer, session.divergence, data.info.num_classes, progress
    )
    session.metrics, session.best = _metrics_and_best(run_dir, cluster, trainer, resumed_from)
    if cluster.is_chief and resumed_from:
        from actrec.train.life.run_record import worker_change_note

        note = worker_change_note(run_dir, previous, cluster.num_workers, trainer.step, recipe)
        if note:
            progress.message(note)
    if data.validation.note:
        progress.message(data.validation.note)
    if recipe.train.class_balance != "none" and cluster.is_chief:
        from actrec.train.inputs.class_balance import balance_summary

        progress.message(balance_summary(recipe.train.class_balance, data.class_counts))
    summary = TrainSummary(
        run_dir, position.epoch, trainer.step, resumed_from=resumed_from, batch_decision=decision
    )
    _run_epochs_recorded(session, position, summary, run_dir)
    session.batches.release()
    summary.global_step = trainer.step
    summary.num_all_reduces = trainer.num_all_reduces
    summary.clips_decoded = int(session.batches.clips_decoded.numpy())
    if cluster.is_chief:
        _record_the_end(session, summary, run_dir)
    summary.elapsed_seconds = time.monotonic() - started
    return summary


def _started_strategy(recipe, environ):
    """The run's tf.distribute strategy, created before any TensorFlow op (GPU memory growth
    first when the batch is probed, so that the probes can use the GPU)."""
    from actrec.cluster.strategy import build_strategy
    from actrec.train.memory.budget import prepare_devices_for_probing
    from actrec.train.memory.recipe_edits import auto_fields

    if auto_fields(recipe):
        prepare_devices_for_probing()  # before the strategy starts TensorFlow's runtime
    runtime = recipe.runtime
    return build_strategy(
        runtime.strategy, runtime.communication, environ, peer_timeout=runtime.peer_timeout
    )


def _decided_batch(strategy, requested, recipe, cluster, has_run, data, memory_budget, progress):
    """(recipe, BatchDecision or None): the auto batch values resolved on every worker."""
    from actrec.train.memory.auto_batch import resolve_auto_batch
    from actrec.train.memory.recipe_edits import auto_fields

    if not auto_fields(requested):
        return recipe, None
    # the same on every worker: they all take part
    return resolve_auto_batch(
        strategy, recipe, cluster, has_run, data.info, data.train_videos, memory_budget, progress
    )


def _session(strategy, recipe, prepared_dir, run_dir, data, cluster, environ, progress) -> Session:
    """The seeded trainer, its divergence guard, checkpoints and input pipelines."""
    import keras
    import tensorflow as tf

    from actrec.data.input.pipeline import batch_finisher
    from actrec.train.inputs.class_balance import class_weights
    from actrec.train.inputs.input_pipelines import PhaseBatches
    from actrec.train.life.checkpoint import RunCheckpoints
    from actrec.train.life.divergence import DivergenceGuard
    from actrec.train.life.epochs import Session
    from actrec.train.life.faults import NanInjection
    from actrec.train.loop.trainer import build_trainer

    keras.utils.set_random_seed(recipe.runtime.seed)
    if recipe.runtime.deterministic:
        tf.config.experimental.enable_op_determinism()
    # The pipeline stops at decoded uint8 crops; flip, resize and scaling run with the model.
    injection = NanInjection(cluster.task_index, environ)  # ACTREC_INJECT_NAN, tests only
    trainer = build_trainer(
        strategy,
        recipe,
        data.info.num_classes,
        injection.wrap(batch_finisher(data.train_spec, data.teacher_spec)),
        data.teacher,
        class_weights=(
            class_weights(data.class_counts) if recipe.train.class_balance == "weights" else None
        ),
    )
    divergence = DivergenceGuard(recipe.train)
    clips_decoded = tf.Variable(0, dtype=tf.int64, trainable=False)  # by this process
    checkpoints = RunCheckpoints(
        run_dir,
        {**trainer.checkpoint_items(), **divergence.checkpoint_items()},
        is_chief=cluster.is_chief,
        worker_index=cluster.task_index,
        keep=recipe.runtime.keep_checkpoints,
        num_classes=data.info.num_classes,
    )
    batches = PhaseBatches(recipe, prepared_dir, data, trainer, divergence, clips_decoded)
    return Session(
        recipe=recipe,
        prepared_dir=prepared_dir,
        data=data,
        cluster=cluster,
        trainer=trainer,
        divergence=divergence,
        checkpoints=checkpoints,
        injection=injection,
        batches=batches,
        progress=progress,
    )


def _metrics_and_best(run_dir: Path, cluster, trainer, resumed_from):
    """(MetricsLog, BestWeights): the metrics log (its lines after a resumed checkpoint
    dropped) and the best validation so far."""
    from actrec.train.life.best import BestWeights
    from actrec.train.life.metrics_log import MetricsLog, truncate_metrics

    metrics = MetricsLog(run_dir, cluster.is_chief)
    if cluster.is_chief and resumed_from:
        truncate_metrics(metrics.path, trainer.step)
    return metrics, BestWeights(run_dir, cluster.is_chief, trainer.step)


def _run_epochs_recorded(
    session: Session, position: Position, summary: TrainSummary, run_dir: Path
) -> None:
    """run_epochs with SIGTERM caught; a damaged shard or a divergence recorded in run.json."""
    import tensorflow as tf

    from actrec.data.format.integrity import data_loss_error
    from actrec.train.life.epochs import run_epochs
    from actrec.train.life.run_record import record_status

    is_chief = session.cluster.is_chief
    session.termination.install()
    try:
        run_epochs(session, position, summary)
    except tf.errors.DataLossError as error:  # a shard damaged since the start: name it
        kept = (
            f"The checkpoints in {session.checkpoints.chief_directory} are kept: continue with "
            "--resume once the data is repaired"
        )
        damaged = data_loss_error(session.prepared_dir, session.data.splits_read, error, kept)
        if is_chief:
            record_status(run_dir, "damaged-data", str(damaged))
        raise damaged from None
    except DivergenceError as error:
        if is_chief:
            record_status(run_dir, "diverged", str(error))
        raise
    except Exception as error:
        from actrec.cluster.worker_loss import is_collective_failure, worker_lost_error

        if session.cluster.num_workers < 2 or not is_collective_failure(error):
            raise
        lost = worker_lost_error(
            error, session.cluster, session.trainer.step, session.checkpoints.latest_path()
        )
        if is_chief:
            record_status(run_dir, "worker-lost", str(lost))
        raise lost from None
    finally:
        session.termination.uninstall()
        session.metrics.close()


def _record_the_end(session: Session, summary: TrainSummary, run_dir: Path) -> None:
    """The final weights (a finished run) and run.json's final record (chief only)."""
    from actrec.train.life.run_record import finish_run_record

    if not (summary.preempted or summary.stopped_early):
        summary.weights_path = save_weights_atomically(
            session.trainer.model, run_dir / FINAL_WEIGHTS_FILE
        )
    finish_run_record(run_dir, summary, session.divergence)
