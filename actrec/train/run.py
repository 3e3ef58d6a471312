"""One training run: recipe + prepared data -> a run directory with a trained model.

    RUN/recipe.yaml        the resolved recipe (what `--resume` continues)
    RUN/run.json           data folder, classes, status, final metrics, the batch decision,
                           the validation hold-out and the best validation
    RUN/checkpoints/       model, optimizer, step and schedule position (tf.train.CheckpointManager)
    RUN/metrics.jsonl      one JSON object per logged step, epoch, validation and recovery
    RUN/tensorboard/       TensorBoard events
    RUN/final.weights.h5   the trained weights (rebuild the model from recipe.yaml)
    RUN/best.weights.h5    the weights of the best validation top-1 (actrec.train.best)

Validation never reads the test split (actrec.train.validation); a diverging loss rolls
every worker back to the last checkpoint (actrec.train.divergence); shard sizes are checked
at start and a read error names the damaged shard (actrec.data.integrity).

The strategy is created first, before any TensorFlow op (multi-worker collectives require
it). Every worker runs this function; only the chief writes the run directory. Each epoch
rebuilds the input pipeline for that epoch's batch (the adaptive schedule), seeded by
(seed, epoch), so a resumed run sees exactly the batches it would have seen; it starts the
pipeline at its position without reading the clips before it.

train.batch_size / train.max_per_replica_batch "auto" are resolved before the model is built
(actrec.train.memory): the chief probes, every worker receives the numbers, recipe.yaml
holds them, and a resumed run reuses them without probing.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from actrec import __version__
from actrec.atomic import append_line_durably, read_json_lines, write_text_atomic
from actrec.errors import ActrecError, ConfigError, DivergenceError, OutputError
from actrec.progress import NullProgress, Progress
from actrec.runs import (
    FINAL_WEIGHTS_FILE,
    METRICS_FILE,
    RECIPE_FILE,
    TENSORBOARD_DIR,
    read_run_record,
    save_weights_atomically,
    update_run_record,
    write_run_record,
)

PREEMPTED_EXIT_CODE = 143


@dataclass
class TrainSummary:
    """What a call of `train` did."""

    run_dir: Path
    epochs_done: int
    global_step: int
    validation: dict = field(default_factory=dict)
    preempted: bool = False
    stopped_early: bool = False
    resumed_from: str | None = None
    elapsed_seconds: float = 0.0
    num_all_reduces: int = 0
    weights_path: Path | None = None
    batch_decision: object | None = None  # actrec.train.memory.BatchDecision, when probed
    clips_decoded: int = 0  # training clips this process's input pipelines decoded


class _TerminationFlag:
    """Set by SIGTERM (preemption); training checkpoints at the next step and stops."""

    def __init__(self):
        self.raised = False
        self._previous = None

    def install(self) -> None:
        try:
            self._previous = signal.signal(signal.SIGTERM, self._handle)
        except ValueError:  # not the main thread (e.g. some test runners): no preemption
            self._previous = None

    def _handle(self, signum, frame) -> None:
        self.raised = True

    def uninstall(self) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)


def _chief_values(strategy, values: list[float], is_chief: bool, num_workers: int) -> list[float]:
    """The chief's `values` on every worker (one all-reduce; only the chief's first replica
    contributes)."""
    if num_workers <= 1:
        return values
    import tensorflow as tf

    shared = tf.constant(values if is_chief else [0.0] * len(values), tf.float32)

    def from_chief():
        context = tf.distribute.get_replica_context()
        first = tf.equal(context.replica_id_in_sync_group, 0)
        return context.all_reduce("SUM", tf.where(first, shared, tf.zeros_like(shared)))

    result = strategy.experimental_local_results(strategy.run(from_chief))[0]
    return [float(value) for value in result.numpy()]


def _agreed_flag(strategy, flag: bool, num_workers: int) -> bool:
    """True when any worker has `flag` set (one scalar all-reduce across workers)."""
    from actrec.train.divergence import agreed_counts

    return agreed_counts(strategy, [flag], num_workers)[0] > 0


# --- run directory -----------------------------------------------------------------------


def check_run_directory(run_dir: Path, resume: str | None) -> bool:
    """Whether `run_dir` holds a run to resume; OutputError when it cannot be used."""
    if run_dir.exists() and not run_dir.is_dir():
        raise OutputError(f"--workdir {run_dir} is a file; pass a folder (created if missing)")
    has_run = (run_dir / RECIPE_FILE).exists()
    if has_run and resume is None:
        raise OutputError(
            f"{run_dir} already holds a training run; add --resume to continue it, or choose "
            "a new --workdir (a trained run is never overwritten)"
        )
    if not has_run and run_dir.exists() and any(run_dir.iterdir()):
        raise OutputError(
            f"--workdir {run_dir} is not empty and holds no actrec run; choose an empty or new "
            "folder"
        )
    return has_run


def _check_same_recipe(run_dir: Path, recipe) -> None:
    from actrec.config import load_recipe, recipe_to_dict

    saved = load_recipe(str(run_dir / RECIPE_FILE))
    old, new = recipe_to_dict(saved), recipe_to_dict(recipe)
    differences = [
        f"{section}.{key}: {old[section].get(key)!r} -> {new[section].get(key)!r}"
        for section in ("data", "model", "train")
        for key in sorted(set(old[section]) | set(new[section]))
        if old[section].get(key) != new[section].get(key)
    ]
    if differences:
        raise ConfigError(
            f"{run_dir} was trained with a different recipe ({'; '.join(differences[:5])}); "
            "resume without --recipe/--set to continue it as it was, or train into a new "
            "--workdir"
        )


def _truncate_metrics(path: Path, global_step: int) -> None:
    """Drop metric lines written after the checkpoint being resumed (they will be redone),
    and the "epoch" line at its step (an epoch resumed at its start writes it again)."""
    rows = read_json_lines(path)
    kept = [
        row
        for row in rows
        if row.get("global_step", 0) < global_step
        or (row.get("global_step", 0) == global_step and row.get("event") != "epoch")
    ]
    if len(kept) != len(rows):
        write_text_atomic(path, "".join(json.dumps(row) + "\n" for row in kept))


# --- building blocks ------------------------------------------------------------------------


def _resolve_auto_batch(
    strategy, recipe, cluster, has_run: bool, info, train_videos: int, memory_budget, progress
):
    """(recipe with numbers in place of auto, BatchDecision or None): the chief probes
    (unless the run being resumed already holds the numbers) and shares them."""
    from actrec.train.memory import choose_batch, with_decided_values

    decision, refusal = None, None
    if cluster.is_chief and not has_run:
        try:
            decision = choose_batch(
                recipe,
                info.num_classes,
                num_replicas=int(strategy.num_replicas_in_sync),
                num_train_videos=train_videos,
                budget_bytes=memory_budget,
                progress=progress,
            )
            recipe = decision.apply(recipe)
        except ActrecError as error:
            refusal = error
    if _agreed_flag(strategy, refusal is not None, cluster.num_workers):
        raise refusal or ConfigError(
            "the chief worker could not choose the batch size; its output says why"
        )
    keys = ("batch_size", "max_per_replica_batch")
    numbers = [float(getattr(recipe.train, key) or 0) for key in keys] if cluster.is_chief else []
    shared = _chief_values(strategy, numbers or [0.0] * 2, cluster.is_chief, cluster.num_workers)
    if not cluster.is_chief:
        values = dict(zip(keys, (round(value) or None for value in shared), strict=True))
        recipe = with_decided_values(recipe, values)
    return recipe, decision


def _batch_phase_start(train_config, epoch: int) -> int:
    """The first epoch of the run of epochs that share `epoch`'s global batch."""
    from actrec.train.schedule import global_batch_size

    batch = global_batch_size(train_config, epoch)
    while epoch > 0 and global_batch_size(train_config, epoch - 1) == batch:
        epoch -= 1
    return epoch


def _epoch_seed(seed: int, epoch: int) -> int:
    return seed * 100_003 + epoch


class _MetricsLog:
    """metrics.jsonl and TensorBoard scalars, written by the chief only."""

    def __init__(self, run_dir: Path, enabled: bool):
        self.enabled = enabled
        self.path = run_dir / METRICS_FILE
        self._writer = None
        if enabled:
            import tensorflow as tf

            self._writer = tf.summary.create_file_writer(str(run_dir / TENSORBOARD_DIR))

    def write(self, event: str, global_step: int, **values) -> None:
        if not self.enabled:
            return
        import tensorflow as tf

        row = {"event": event, "global_step": global_step, **values, "time": time.time()}
        append_line_durably(self.path, json.dumps(row))
        with self._writer.as_default(step=global_step):
            for name, value in values.items():
                if isinstance(value, (int, float)) and name not in ("epoch", "step"):
                    tf.summary.scalar(f"{event}/{name}", value)
        self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


# --- the run ----------------------------------------------------------------------------------


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
    on_batch_decision: Callable[[object], None] | None = None,
) -> TrainSummary:
    """Train `recipe` on `prepared_dir` into `run_dir` (every worker calls this).

    resume: None (a new run), "latest" (continue the run in run_dir from its newest
    checkpoint; a new run when there is none yet) or a checkpoint path.
    stop_after_steps: checkpoint and return after this many optimizer steps in this call.
    memory_budget: bytes a probed batch may use (train.batch_size=auto or
    train.max_per_replica_batch=auto); None: actrec.train.memory.default_memory_budget.
    on_batch_decision: called with the actrec.train.memory.BatchDecision once the chief has
    probed (before training starts), e.g. to print its table.
    """
    from actrec.train.memory import auto_fields, prepare_devices_for_probing
    from actrec.train.strategy import build_strategy, cluster_from_environment

    started = time.monotonic()
    progress = progress or NullProgress()
    prepared_dir, run_dir = Path(prepared_dir), Path(run_dir)
    cluster = cluster_from_environment(environ)
    if auto_fields(recipe):
        prepare_devices_for_probing()  # before the strategy starts TensorFlow's runtime
    strategy = build_strategy(recipe.runtime.strategy, recipe.runtime.communication, environ)

    import keras
    import tensorflow as tf

    from actrec.config import clip_spec, dump_recipe, load_recipe, validate_recipe
    from actrec.data.integrity import check_shard_sizes, data_loss_error
    from actrec.data.manifest import read_manifest
    from actrec.data.pipeline import batch_finisher, build_dataset, check_clip_spec, dataset_info
    from actrec.train.best import BestWeights
    from actrec.train.checkpoint import Position, RunCheckpoints
    from actrec.train.divergence import DivergenceGuard
    from actrec.train.faults import NanInjection
    from actrec.train.schedule import epoch_plan, learning_rate
    from actrec.train.trainer import build_trainer
    from actrec.train.validation import validation_plan

    validate_recipe(recipe)
    requested = recipe
    info = dataset_info(prepared_dir)
    train_spec, eval_spec = clip_spec(recipe, training=True), clip_spec(recipe, training=False)
    check_clip_spec(info, train_spec)
    train_videos = info.num_videos.get(recipe.data.train_split, 0)
    if not train_videos:
        raise ConfigError(
            f"{prepared_dir} has no videos in the {recipe.data.train_split!r} split; it has "
            f"{', '.join(f'{k} ({v})' for k, v in info.num_videos.items())}"
        )
    validation = validation_plan(recipe, read_manifest(prepared_dir))
    train_videos -= len(validation.held_out)
    splits_read = sorted({recipe.data.train_split, validation.split} - {None})
    check_shard_sizes(prepared_dir, splits_read)  # a damaged shard is named before training
    # Only the chief judges the run directory (the others would race with its writes);
    # its verdict reaches every worker, so a refused run stops them all instead of leaving
    # them waiting in their first collective.
    has_run, refusal, previous_record = False, None, {}
    if cluster.is_chief:
        try:
            has_run = check_run_directory(run_dir, resume)
            if has_run:
                if auto_fields(recipe):  # the run's recipe.yaml holds the numbers it chose
                    from actrec.train.memory import with_saved_decision

                    recipe = with_saved_decision(recipe, load_recipe(str(run_dir / RECIPE_FILE)))
                _check_same_recipe(run_dir, recipe)
                previous_record = read_run_record(run_dir)
        except ActrecError as error:
            refusal = error
    if _agreed_flag(strategy, refusal is not None, cluster.num_workers):
        raise refusal or OutputError(
            f"the chief worker refused --workdir {run_dir}; its output says why"
        )
    decision = None
    if auto_fields(requested):  # the same on every worker: they all take part
        recipe, decision = _resolve_auto_batch(
            strategy, recipe, cluster, has_run, info, train_videos, memory_budget, progress
        )
        if decision is not None and on_batch_decision is not None:
            on_batch_decision(decision)
    if cluster.is_chief:
        run_dir.mkdir(parents=True, exist_ok=True)
        if not has_run:
            dump_recipe(recipe, run_dir / RECIPE_FILE)
        record = {
            "actrec": __version__,
            "data": str(prepared_dir.resolve()),
            "classes": list(info.classes),
            "num_classes": info.num_classes,
            "status": "training",
            "workers": cluster.num_workers,
        }
        if decision is not None:
            record["batch_decision"] = decision.to_json()
        elif "batch_decision" in previous_record:
            record["batch_decision"] = previous_record["batch_decision"]
        if "best" in previous_record:  # checked against the resumed step by BestWeights
            record["best"] = previous_record["best"]
        if validation.held_out:
            record["holdout"] = validation.to_json(
                recipe.data.validation_holdout, recipe.runtime.seed
            )
        write_run_record(run_dir, record)

    keras.utils.set_random_seed(recipe.runtime.seed)
    if recipe.runtime.deterministic:
        tf.config.experimental.enable_op_determinism()
    # The pipeline stops at decoded uint8 crops; flip, resize and scaling run with the model.
    injection = NanInjection(cluster.task_index, environ)  # ACTREC_INJECT_NAN, tests only
    trainer = build_trainer(
        strategy, recipe, info.num_classes, injection.wrap(batch_finisher(train_spec))
    )
    divergence = DivergenceGuard(recipe.train)
    clips_decoded = tf.Variable(0, dtype=tf.int64, trainable=False)  # by this process
    checkpoints = RunCheckpoints(
        run_dir,
        {**trainer.checkpoint_items(), **divergence.checkpoint_items()},
        is_chief=cluster.is_chief,
        worker_index=cluster.task_index,
        keep=recipe.runtime.keep_checkpoints,
        num_classes=info.num_classes,
    )
    position = Position(0, 0)
    resumed_from = None
    if resume is not None and (resume != "latest" or checkpoints.latest_path() is not None):
        resumed_from = None if resume == "latest" else resume
        position = checkpoints.restore(resumed_from, expected_classes=info.num_classes)
        resumed_from = resumed_from or checkpoints.latest_path()
        progress.message(
            f"resumed from {resumed_from}: epoch {position.epoch + 1}, "
            f"step {position.step_in_epoch}"
        )
    elif divergence.enabled:  # a divergence before the first save needs a state to return to
        checkpoints.save(position, trainer.step)
    metrics = _MetricsLog(run_dir, cluster.is_chief)
    if cluster.is_chief and resumed_from:
        _truncate_metrics(metrics.path, trainer.step)
    best = BestWeights(run_dir, cluster.is_chief, trainer.step)
    if validation.note:
        progress.message(validation.note)

    termination = _TerminationFlag()
    termination.install()
    summary = TrainSummary(
        run_dir, position.epoch, trainer.step, resumed_from=resumed_from, batch_decision=decision
    )
    steps_this_call = 0
    replicas = trainer.num_replicas_in_sync
    batches, current_phase = None, None
    try:
        for epoch in range(position.epoch, recipe.train.epochs):
            plan = epoch_plan(recipe.train, recipe.runtime, epoch, replicas, train_videos)
            replica_batch = plan.per_replica_batch * plan.accumulation_steps
            first_step = position.step_in_epoch if epoch == position.epoch else 0
            if first_step == 0:
                metrics.write(
                    "epoch",
                    trainer.step,
                    epoch=epoch,
                    global_batch=plan.global_batch,
                    per_replica_batch=plan.per_replica_batch,
                    accumulation_steps=plan.accumulation_steps,
                    steps_per_epoch=plan.steps_per_epoch,
                    lr=learning_rate(recipe.train, epoch, 0, plan.steps_per_epoch),
                )

            phase_start = _batch_phase_start(recipe.train, epoch)
            if batches is None or phase_start != current_phase:
                # One input pipeline per batch-size phase of the schedule, seeded by the
                # phase's first epoch. A resumed run starts it after the batches the phase
                # has used (and those divergence recoveries skipped): the data order is a
                # function of the example index, so nothing skipped is read or decoded
                # (actrec.data.order).
                current_phase = phase_start
                phase_seed = _epoch_seed(recipe.runtime.seed, phase_start)
                used = (epoch - phase_start) * plan.steps_per_epoch + first_step
                used += divergence.data_skip

                def train_dataset(context, seed=phase_seed, batch=replica_batch, steps=used):
                    # each step takes one batch per replica this input pipeline feeds
                    replicas = context.num_replicas_in_sync // context.num_input_pipelines
                    return build_dataset(
                        prepared_dir,
                        recipe.data.train_split,
                        train_spec,
                        batch,
                        training=True,
                        seed=seed,
                        input_context=context,
                        repeat=True,
                        start_example=steps * batch * replicas,
                        finish_on_device=True,
                        decode_counter=clips_decoded,
                        skip_videos=validation.held_out,
                    )

                batches = iter(trainer.distribute(train_dataset))
            description = f"epoch {epoch + 1}/{recipe.train.epochs}"
            progress.start(description, plan.steps_per_epoch)
            stopped_mid_epoch = False
            progress.advance(first_step)
            step = first_step  # optimizer steps done in this epoch
            while step < plan.steps_per_epoch:
                rate = learning_rate(recipe.train, epoch, step, plan.steps_per_epoch)
                rate *= divergence.lr_scale
                step_started = time.monotonic()
                injection.arm(trainer.step + 1)
                values = trainer.train_step(next(batches), rate, plan.accumulation_steps)
                step += 1
                clips_per_second = plan.global_batch / max(time.monotonic() - step_started, 1e-9)
                steps_this_call += 1
                divergence.observe(values["loss"])
                progress.advance(1, clips=plan.global_batch)
                progress.show(
                    loss=values["loss"],
                    accuracy=values["accuracy"],
                    lr=rate,
                    batch=plan.global_batch,
                    **divergence.shown(),
                )
                if trainer.step % recipe.runtime.log_every_steps == 0:
                    metrics.write(
                        "train",
                        trainer.step,
                        epoch=epoch,
                        step=step,
                        loss=values["loss"],
                        accuracy=values["accuracy"],
                        lr=rate,
                        global_batch=plan.global_batch,
                        clips_per_second=clips_per_second,
                    )
                budget_spent = stop_after_steps is not None and steps_this_call >= stop_after_steps
                every = recipe.runtime.checkpoint_every_steps
                saving = budget_spent or (every > 0 and trainer.step % every == 0)
                saving = saving or step == plan.steps_per_epoch
                # kavg workers communicate only every K steps (and before a checkpoint); so do
                # the preemption and divergence checks.
                communicate = recipe.train.sync == "allreduce" or (
                    trainer.step % recipe.train.kavg_steps == 0
                )
                stop, diverged = divergence.check(
                    trainer, termination.raised, communicate, saving, cluster.num_workers
                )
                if diverged:
                    where = {"epoch": epoch, "step": step, "workers": diverged}
                    restored = divergence.roll_back(
                        checkpoints, trainer, where, metrics, progress, info.num_classes
                    )
                    step = restored.step_in_epoch
                    progress.start(description, plan.steps_per_epoch)
                    progress.advance(step)
                    if not stop:
                        continue  # else the recovery is checkpointed before stopping
                if saving or stop:
                    end_of_epoch = step == plan.steps_per_epoch
                    if end_of_epoch and _batch_phase_start(recipe.train, epoch + 1) == epoch + 1:
                        divergence.new_phase()  # the next epoch reads a new input stream
                    saved = Position(epoch + 1, 0) if end_of_epoch else Position(epoch, step)
                    checkpoints.save(saved, trainer.step)
                summary.preempted = summary.preempted or bool(stop)
                if (stop or budget_spent) and step < plan.steps_per_epoch:
                    summary.stopped_early = not stop
                    stopped_mid_epoch = True
                    break
            progress.finish()
            if stopped_mid_epoch:
                break
            summary.epochs_done = epoch + 1
            if summary.preempted:  # SIGTERM on an epoch's last step: its checkpoint is saved
                break
            every_validation = recipe.runtime.validate_every_epochs
            if (
                validation.split
                and every_validation
                and ((epoch + 1) % every_validation == 0 or epoch + 1 == recipe.train.epochs)
            ):
                eval_batch = max(1, plan.per_replica_batch)

                def eval_dataset(context, batch=eval_batch):
                    return build_dataset(
                        prepared_dir,
                        validation.split,
                        eval_spec,
                        batch,
                        training=False,
                        input_context=context,
                        only_videos=validation.held_out or None,
                    )

                summary.validation = trainer.evaluate(trainer.distribute(eval_dataset))
                is_best = best.update(
                    trainer.model, epoch, trainer.step, validation.name, summary.validation
                )
                metrics.write(
                    "validation",
                    trainer.step,
                    epoch=epoch,
                    split=validation.name,
                    **summary.validation,
                )
                progress.message(
                    f"epoch {epoch + 1}: {validation.name} accuracy "
                    f"{summary.validation['accuracy']:.3f}, loss {summary.validation['loss']:.4f}"
                    + (" (best so far: best.weights.h5)" if is_best else "")
                )
            if stop_after_steps is not None and steps_this_call >= stop_after_steps:
                summary.stopped_early = epoch + 1 < recipe.train.epochs
                break
    except tf.errors.DataLossError as error:  # a shard damaged since the start: name it
        kept = f"The checkpoints in {checkpoints.chief_directory} are kept: continue with " + (
            "--resume once the data is repaired"
        )
        damaged = data_loss_error(prepared_dir, splits_read, error, kept)
        if cluster.is_chief:
            _record_status(run_dir, "damaged-data", str(damaged))
        raise damaged from None
    except DivergenceError as error:
        if cluster.is_chief:
            _record_status(run_dir, "diverged", str(error))
        raise
    finally:
        termination.uninstall()
        metrics.close()
    summary.global_step = trainer.step
    summary.num_all_reduces = trainer.num_all_reduces
    summary.clips_decoded = int(clips_decoded.numpy())
    finished = not (summary.preempted or summary.stopped_early)
    if cluster.is_chief:
        if finished:
            summary.weights_path = save_weights_atomically(
                trainer.model, run_dir / FINAL_WEIGHTS_FILE
            )
        update_run_record(
            run_dir,
            status="finished" if finished else ("preempted" if summary.preempted else "stopped"),
            global_step=trainer.step,
            all_reduces=trainer.num_all_reduces,
            epochs_done=summary.epochs_done,
            validation=summary.validation,
            recoveries=divergence.recoveries,
        )
    summary.elapsed_seconds = time.monotonic() - started
    return summary


def _record_status(run_dir: Path, status: str, error: str) -> None:
    """run.json's status and the error that stopped the run."""
    update_run_record(run_dir, status=status, error=error)
