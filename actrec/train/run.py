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
recipe.yaml holds them (actrec.train.start.source_settings). The recipe is decided once, in
stages each with its own name (actrec.train.plan).

train.batch_size / train.max_per_replica_batch "auto" are resolved before the model is built
(actrec.train.memory.auto_batch): the chief probes, every worker receives the numbers, recipe.yaml
holds them, and a resumed run reuses them without probing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from actrec.cluster.strategy import build_strategy, cluster_from_environment
from actrec.cluster.worker_loss import is_collective_failure, worker_lost_error
from actrec.data.format.integrity import data_loss_error
from actrec.data.input.pipeline import batch_finisher
from actrec.errors import ConfigError, DivergenceError
from actrec.progress import NullProgress, Progress
from actrec.runs.folder import FINAL_WEIGHTS_FILE, save_weights_atomically
from actrec.runs.record import RunRecordFile
from actrec.train.inputs.class_balance import balance_summary, class_weights
from actrec.train.inputs.input_pipelines import PhaseBatches
from actrec.train.life.best import BestWeights
from actrec.train.life.checkpoint import Position, RunCheckpoints
from actrec.train.life.divergence import DivergenceGuard
from actrec.train.life.epochs import Session, StepBudget, run_epochs
from actrec.train.life.faults import NanInjection
from actrec.train.life.metrics_log import MetricsLog, truncate_metrics
from actrec.train.life.resume import restore_position, starts_afresh
from actrec.train.life.run_record import (
    finish_run_record,
    record_status,
    start_run_folder,
    worker_change_note,
)
from actrec.train.loop.trainer import build_trainer
from actrec.train.memory.budget import prepare_devices_for_probing
from actrec.train.memory.decision import BatchDecision
from actrec.train.memory.recipe_edits import auto_fields
from actrec.train.plan import plan_run
from actrec.train.probe.probe_run import train_probe
from actrec.train.start.starting_point import load_starting_weights
from actrec.train.threads import use_threads_per_op

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
    feature_cache: Path | str | None = None,
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
    feature_cache: the folder a probe run (train.probe) caches its features in; None:
    RUN/feature_cache (actrec.train.probe).
    """
    started = time.monotonic()
    progress = progress or NullProgress()
    prepared_dir, run_dir = Path(prepared_dir), Path(run_dir)

    # --- the cluster: the strategy before any TensorFlow op ---------------------------------
    cluster = cluster_from_environment(environ)
    strategy = _started_strategy(recipe, environ)

    # --- the plan: the recipe decided once, the data checked, the folder judged ------------
    plan = plan_run(
        strategy,
        cluster,
        requested=recipe,
        prepared_dir=prepared_dir,
        run_dir=run_dir,
        resume=resume,
        given_settings=given_settings,
        memory_budget=memory_budget,
        progress=progress,
    )
    data, start = plan.data, plan.start
    classes, num_classes = data.info.classes, data.info.num_classes
    if plan.decision is not None and on_batch_decision is not None:
        on_batch_decision(plan.decision)
    if plan.recipe.train.probe != "none" and cluster.num_workers > 1:
        raise ConfigError(
            f"train.probe={plan.recipe.train.probe} runs on one worker ({cluster.num_workers} "
            "were started): its features are computed once and its head trains in seconds; "
            "run `actrec train` without `actrec launch`, TF_CONFIG or Slurm's tasks"
        )

    # --- the run folder: recipe.yaml and run.json's start (the chief alone writes) ---------
    record_file = (
        start_run_folder(
            run_dir, plan=plan, prepared_dir=prepared_dir, num_workers=cluster.num_workers
        )
        if cluster.is_chief
        else None  # the other workers write nothing
    )
    if data.teacher is not None:
        progress.message(data.teacher.describe())
        if data.teacher.note and not plan.has_run:
            progress.message(data.teacher.note)

    # --- a probe: the head on cached features (actrec.train.probe), nothing below -----------
    if plan.recipe.train.probe != "none":
        return _probe_run(
            plan, cluster, prepared_dir, run_dir, record_file, progress, feature_cache, started
        )

    # --- the model and its state: seeded trainer, divergence guard, checkpoints, inputs ----
    training_recipe = plan.training_recipe
    keras.utils.set_random_seed(training_recipe.runtime.seed)
    if training_recipe.runtime.deterministic:
        tf.config.experimental.enable_op_determinism()
    # The pipeline stops at decoded uint8 crops; flip, resize and scaling run with the model.
    injection = NanInjection(cluster.task_index, environ)  # ACTREC_INJECT_NAN, tests only
    balance = training_recipe.train.class_balance
    trainer = build_trainer(
        strategy,
        training_recipe,
        num_classes,
        injection.wrap(batch_finisher(data.train_spec, data.teacher_spec)),
        data.teacher,
        class_weights=class_weights(data.class_counts) if balance == "weights" else None,
    )
    divergence = DivergenceGuard(training_recipe.train)
    checkpoints = RunCheckpoints(
        run_dir,
        {**trainer.checkpoint_items(), **divergence.checkpoint_items()},
        is_chief=cluster.is_chief,
        worker_index=cluster.task_index,
        keep=training_recipe.runtime.keep_checkpoints,
        num_classes=num_classes,
    )
    clips_decoded = tf.Variable(0, dtype=tf.int64, trainable=False)  # by this process
    batches = PhaseBatches(training_recipe, prepared_dir, data, trainer, divergence, clips_decoded)

    # --- where it starts: the source's weights, or a checkpoint ----------------------------
    if start is not None and starts_afresh(checkpoints, resume):
        for line in load_starting_weights(trainer.model, start, plan.recipe, classes):
            progress.message(line)
    position, resumed_from = restore_position(
        checkpoints, resume, trainer, divergence, num_classes, progress
    )

    # --- what the epochs write: metrics.jsonl (from the resumed step), the best weights ----
    metrics = MetricsLog(run_dir, cluster.is_chief)
    if cluster.is_chief and resumed_from:
        truncate_metrics(metrics.path, trainer.step)
    best = BestWeights(run_dir, record_file, trainer.step)

    # --- notes for the user -----------------------------------------------------------------
    if record_file is not None and resumed_from:
        note = worker_change_note(
            record_file,
            workers_before=plan.previous.workers,
            num_workers=cluster.num_workers,
            step=trainer.step,
            recipe=plan.recipe,
        )
        if note:
            progress.message(note)
    if data.validation.note:
        progress.message(data.validation.note)
    if balance != "none" and cluster.is_chief:
        progress.message(balance_summary(balance, data.class_counts))

    # --- the epochs --------------------------------------------------------------------------
    session = Session(
        recipe=training_recipe,
        prepared_dir=prepared_dir,
        data=data,
        cluster=cluster,
        trainer=trainer,
        divergence=divergence,
        checkpoints=checkpoints,
        injection=injection,
        batches=batches,
        progress=progress,
        metrics=metrics,
        best=best,
        budget=StepBudget(stop_after_steps),
    )
    summary = TrainSummary(
        run_dir=run_dir,
        epochs_done=position.epoch,
        global_step=trainer.step,
        resumed_from=resumed_from,
        batch_decision=plan.decision,
    )
    _run_epochs_recorded(session, position, summary, record_file)

    # --- the end: the final weights and run.json's final record ----------------------------
    batches.release()
    summary.global_step = trainer.step
    summary.num_all_reduces = trainer.num_all_reduces
    summary.clips_decoded = int(clips_decoded.numpy())
    if record_file is not None:
        if not (summary.preempted or summary.stopped_early):
            summary.weights_path = save_weights_atomically(
                trainer.model, run_dir / FINAL_WEIGHTS_FILE
            )
        finish_run_record(record_file, summary, divergence.recoveries)
    summary.elapsed_seconds = time.monotonic() - started
    return summary


def _probe_run(
    plan,
    cluster,
    prepared_dir: Path,
    run_dir: Path,
    record_file,
    progress,
    feature_cache,
    started: float,
) -> TrainSummary:
    """A probe run (train.probe): the head trained on cached features, run.json finished
    with what the cache did (actrec.train.probe.probe_run)."""
    outcome = train_probe(plan, prepared_dir, run_dir, record_file, progress, feature_cache)
    summary = TrainSummary(
        run_dir=run_dir,
        epochs_done=outcome.epochs_done,
        global_step=outcome.global_step,
        validation=outcome.validation,
        validation_confusion=outcome.validation_confusion,
        weights_path=outcome.weights_path,
    )
    if record_file is not None:
        record_file.update(probe=outcome.to_json())
        finish_run_record(record_file, summary, None)
    summary.elapsed_seconds = time.monotonic() - started
    return summary


def _started_strategy(recipe, environ):
    """The run's tf.distribute strategy, created before any TensorFlow op (GPU memory growth
    first when the batch is probed, so that the probes can use the GPU; the recipe's
    threads per op)."""
    if auto_fields(recipe):
        prepare_devices_for_probing()  # before the strategy starts TensorFlow's runtime
    runtime = recipe.runtime
    use_threads_per_op(runtime.threads_per_op)  # the runtime keeps its own once started
    return build_strategy(
        runtime.strategy, runtime.communication, environ, peer_timeout=runtime.peer_timeout
    )


def _run_epochs_recorded(
    session: Session, position: Position, summary: TrainSummary, record_file: RunRecordFile | None
) -> None:
    """run_epochs with SIGTERM caught; a damaged shard, a divergence or a lost worker
    recorded in run.json (`record_file`: the chief's, None on the other workers)."""
    session.termination.install()
    try:
        run_epochs(session, position, summary)
    except tf.errors.DataLossError as error:  # a shard damaged since the start: name it
        kept = (
            f"The checkpoints in {session.checkpoints.chief_directory} are kept: continue with "
            "--resume once the data is repaired"
        )
        damaged = data_loss_error(session.prepared_dir, session.data.splits_read, error, kept)
        if record_file is not None:
            record_status(record_file, "damaged-data", str(damaged))
        raise damaged from None
    except DivergenceError as error:
        if record_file is not None:
            record_status(record_file, "diverged", str(error))
        raise
    except Exception as error:
        if session.cluster.num_workers < 2 or not is_collective_failure(error):
            raise
        lost = worker_lost_error(
            error, session.cluster, session.trainer.step, session.checkpoints.latest_path()
        )
        if record_file is not None:
            record_status(record_file, "worker-lost", str(lost))
        raise lost from None
    finally:
        session.termination.uninstall()
        session.metrics.close()
