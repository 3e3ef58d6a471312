"""The input pipelines of a run: one training pipeline per batch-size phase, and validation.

Each batch-size phase of the schedule (the epochs that share a global batch) reads one
input stream seeded by the phase's first epoch. A resumed run starts it after the batches
the phase has used (and those divergence recoveries skipped): the data order is a function
of the example index, so nothing skipped is read or decoded (actrec.data.input.order).
"""

from __future__ import annotations

import threading
from pathlib import Path

from actrec.train.schedule import global_batch_size

TEARDOWN_THREAD_NAME = "actrec-input-teardown"


def drop_in_background(holder: list) -> None:
    """Empties the list `holder` on another thread: a value whose last reference the list
    held is destroyed there, not on the caller's thread (the caller keeps no other).

    For a tf.data iterator: its destructor joins tf.data's autotuning thread, which sleeps
    between optimisations for up to a minute once the pipeline has run that long, and is
    not woken by the cancellation (measured: `train()` of the 16-epoch synthetic TSM
    returned 50-55 s after its run was written, idle in RootDataset::Iterator's destructor,
    in 2 of 6 trainings; docs/benchmarks.md, "The test suite's time"). The thread is not a
    daemon: a process that ends waits for it (a daemon thread stopped inside TensorFlow's
    destructor aborts the process), so the wait moves from `train()` to the process's exit,
    where nothing else waits for it.
    """
    threading.Thread(target=holder.clear, name=TEARDOWN_THREAD_NAME).start()


def teardown_pending() -> bool:
    """Whether a `drop_in_background` thread is still destroying an iterator (a process
    that ends now would wait for it)."""
    return any(thread.name == TEARDOWN_THREAD_NAME for thread in threading.enumerate())


def batch_phase_start(train_config, epoch: int) -> int:
    """The first epoch of the run of epochs that share `epoch`'s global batch."""
    batch = global_batch_size(train_config, epoch)
    while epoch > 0 and global_batch_size(train_config, epoch - 1) == batch:
        epoch -= 1
    return epoch


def epoch_seed(seed: int, epoch: int) -> int:
    """The input pipeline's seed of the phase starting at `epoch`."""
    return seed * 100_003 + epoch


class PhaseBatches:
    """The training batches of the current batch-size phase, rebuilt when a phase starts.

    clips_decoded: a tf.Variable counting the clips this process's pipelines decode.
    """

    def __init__(self, recipe, prepared_dir: Path, data, trainer, divergence, clips_decoded):
        self.recipe, self.prepared_dir, self.data = recipe, prepared_dir, data
        self.trainer, self.divergence = trainer, divergence
        self.clips_decoded = clips_decoded
        self.batches, self.current_phase = None, None
        self.started_stream: dict | None = None  # the last stream's start, until logged

    def for_epoch(self, epoch: int, plan, first_step: int):
        """The iterator of distributed batches for `epoch`, starting at `first_step`."""
        phase_start = batch_phase_start(self.recipe.train, epoch)
        if self.batches is None or phase_start != self.current_phase:
            self.release()  # the previous phase's iterator
            self.current_phase = phase_start
            used = (epoch - phase_start) * plan.steps_per_epoch + first_step
            used += self.divergence.data_skip
            replica_batch = plan.per_replica_batch * plan.accumulation_steps
            seed = epoch_seed(self.recipe.runtime.seed, phase_start)
            dataset = training_dataset(
                self.prepared_dir, self.recipe, self.data, seed, replica_batch, used,
                self.clips_decoded,
            )  # fmt: skip
            # where in the phase's example stream (actrec.data.input.order) it starts
            self.started_stream = {
                "phase_start_epoch": phase_start,
                "first_example": used * plan.global_batch,
                "input_pipelines": self.trainer.num_workers,
            }
            self.batches = iter(self.trainer.distribute(dataset))
        return self.batches

    def release(self) -> None:
        """Lets go of the current iterator (`drop_in_background`: its teardown can wait up
        to a minute, on another thread); the next `for_epoch` builds a new one."""
        if self.batches is not None:
            holder, self.batches = [self.batches], None
            drop_in_background(holder)


def training_dataset(
    prepared_dir: Path,
    recipe,
    data,
    seed: int,
    batch: int,
    steps: int,
    clips_decoded=None,
    with_video_ids: bool = False,
):
    """The function of an input context that builds a training phase's dataset: per-replica
    batches of `batch` clips (micro-batches included), seeded by `seed`, from the phase's
    step `steps` on; with_video_ids: each batch also carries its video ids (to check which
    videos a run trained on)."""

    def train_dataset(context):
        # inside: the pipeline loads OpenCV, and the CLI imports this module at every exit
        from actrec.data.input.pipeline import build_dataset

        # each step takes one batch per replica this input pipeline feeds
        replicas = context.num_replicas_in_sync // context.num_input_pipelines
        return build_dataset(
            prepared_dir,
            recipe.data.train_split,
            data.train_spec,
            batch,
            training=True,
            seed=seed,
            input_context=context,
            repeat=True,
            start_example=steps * batch * replicas,
            finish_on_device=True,
            with_video_ids=with_video_ids,
            decode_counter=clips_decoded,
            skip_videos=data.validation.held_out,
            teacher_spec=data.teacher_spec,
            class_balanced=recipe.train.class_balance == "sampling",
        )

    return train_dataset


def validation_dataset(prepared_dir: Path, data, batch: int):
    """The function of an input context that builds the validation split's dataset."""

    def eval_dataset(context):
        from actrec.data.input.pipeline import build_dataset  # OpenCV: as train_dataset's

        return build_dataset(
            prepared_dir,
            data.validation.split,
            data.eval_spec,
            batch,
            training=False,
            input_context=context,
            only_videos=data.validation.held_out or None,
        )

    return eval_dataset
