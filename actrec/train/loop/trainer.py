"""The custom distributed training loop: synchronous all-reduce and
K-step averaging over the same tf.distribute collectives.

The step itself, from a batch to the parameter update, reads top to bottom in
actrec/train/loop/step.py (DistributedTrainer's base class); this module builds what it works
with, places the data and evaluates.

Keras 3's `model.fit` fails under MultiWorkerMirroredStrategy (keras-team/keras#20585),
so actrec runs its own loop: `strategy.run` inside `tf.function`, the loss of each
replica scaled by the GLOBAL batch so that the all-reduced SUM of the gradients is the
gradient of the global mean loss.

Two synchronisation modes:

- `allreduce`: the model and optimizer live in `strategy.scope()` (mirrored variables).
  Each step every replica sums its micro-batch gradients, ONE all-reduce (SUM) averages
  them across all replicas (with the step's loss / accuracy sums packed into the same
  collective), then the optimizer updates every replica identically. Clipping and the
  loss-scale finiteness check see the averaged gradient: Keras' own gradient all-reduce
  (keras/src/backend/tensorflow/optimizer.py `_all_reduce_sum_gradients`) is switched off
  because the loop has already reduced.
- `kavg` (K-step averaging, Zhou & Cong 2018): the model and optimizer are LOCAL
  (non-mirrored) variables, one replica per worker process. Each step is a local update
  (no collective); every K-th step one averaging round all-reduces (MEAN) the values of
  every float model variable (trainable weights and BatchNorm moving statistics; not the
  integer seed-generator state) and, per `adam_state`, the Adam moments, inside
  `strategy.run`, and assigns them back. SGD momentum buffers stay local (as in local SGD);
  with plain SGD and K = 1 this equals `allreduce`.

Shapes: a replica's batch is (clips [k * b, ...], labels int32 [k * b]) for k
accumulation steps of micro-batch b; the model maps clips [b, ...] to logits [b, classes]
(cast to float32 under mixed precision).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from actrec.cluster.strategy import worker_index
from actrec.config import choices
from actrec.config.validate import validate_train_section
from actrec.errors import ConfigError
from actrec.models.factory import model_builder
from actrec.train.distillation.loss import Distillation, distillation_settings
from actrec.train.loop.averaging import (
    broadcast_from_first_worker,
    model_float_variables,
    moment_variables,
    variables_to_average,
)
from actrec.train.loop.mixing import NO_MIX, MixSettings
from actrec.train.loop.optimizer import build_optimizer
from actrec.train.loop.step import TrainStep
from actrec.train.loop.step_statistics import (
    EXAMPLES,
    batch_statistics,
    loss_and_accuracy,
    per_example_loss,
)

if TYPE_CHECKING:
    import keras
    import tensorflow as tf

    from actrec.config.recipe import TrainConfig
    from actrec.train.distillation.loss import DistillationSettings

KERAS_POLICIES = {"none": None, "float16": "mixed_float16", "bfloat16": "mixed_bfloat16"}


@contextlib.contextmanager
def _keras_policy(mixed_precision: str):
    """Set the global Keras dtype policy for building, and restore the previous one."""
    import keras

    policy = KERAS_POLICIES[mixed_precision]
    previous = keras.mixed_precision.global_policy()
    if policy is not None:
        keras.mixed_precision.set_global_policy(policy)
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)


def _worker_devices(strategy: tf.distribute.Strategy) -> tuple[str, ...]:
    """The devices of this process's replicas ("/job:.../device:CPU:0", ...); () for the
    default strategy, which has no device list (it runs on the process's default device)."""
    try:
        return tuple(strategy.extended.worker_devices)
    except (RuntimeError, NotImplementedError):
        return ()


def _replicas_per_worker(strategy: tf.distribute.Strategy) -> int:
    return len(_worker_devices(strategy)) or 1


class DistributedTrainer(TrainStep):
    """The model, optimizer and compiled steps of one training process (the training step
    is TrainStep's, actrec/train/loop/step.py).

    strategy: from actrec.cluster.strategy.build_strategy (every worker builds the same).
    model_builder: returns a BUILT keras.Model (give it a keras.Input) mapping clips to
        logits [B, classes]; called under the mixed-precision policy, after
        `keras.utils.set_random_seed(seed)`.
    train: the recipe's train section (actrec.config.TrainConfig; checked here by
        actrec.config.validate.validate_train_section), of which the trainer reads the
        optimizer (actrec.train.loop.optimizer.build_optimizer), the synchronisation (sync,
        kavg_steps, adam_state), label_smoothing (targets (1 - s) one-hot + s / classes),
        mixup / cutmix (actrec.train.loop.mixing, drawn from `seed` and the step) and
        mixed_precision ("float16": mixed_float16 + dynamic loss scaling; "bfloat16":
        mixed_bfloat16).
    input_transform: applied to each replica's training clips where that replica runs,
        before the model (actrec.data.input.training_clips.finish_batch: uint8 crops -> clips).
    distillation: a flow teacher to distil from (actrec.train.distillation.loss); the training
        clips are then (student clips, teacher clips), and `self.distillation` holds the
        teacher, the projection and the model the optimizer trains (student + projection).
    class_weights: float [classes]: each training example's loss x its class's weight
        (train.class_balance weights: actrec.train.inputs.class_balance); None: unweighted.

    Attributes: model, optimizer, strategy, step_variable (int64 optimizer steps, for
    checkpoints), num_replicas_in_sync (global replicas; workers under kavg),
    num_all_reduces (collective rounds this process issued for training: one per step
    under allreduce, one per averaging round under kavg, counted where they are issued;
    evaluation's reductions and kavg's initial broadcast are not counted), num_traces
    (how often the train step was traced).
    """

    def __init__(
        self,
        strategy: tf.distribute.Strategy,
        model_builder: Callable[[], keras.Model],
        train: TrainConfig,
        *,
        seed: int = 0,
        input_transform: Callable[[tf.Tensor], tf.Tensor] | None = None,
        distillation: DistillationSettings | None = None,
        class_weights: Sequence[float] | None = None,
    ):
        import keras
        import tensorflow as tf

        validate_train_section(train)
        self.strategy = strategy
        self.train = train
        self.label_smoothing = float(train.label_smoothing)
        self.class_weights = (
            None if class_weights is None else np.asarray(class_weights, dtype=np.float32)
        )
        self.input_transform = input_transform
        self.replicas_per_worker = _replicas_per_worker(strategy)
        self.num_workers = max(1, strategy.num_replicas_in_sync // self.replicas_per_worker)
        self.worker_index = worker_index(strategy)
        self.local_updates = train.sync == "kavg"
        self.kavg_steps = train.kavg_steps
        self.reset_adam_state = (
            self.local_updates
            and train.optimizer in choices.ADAM_OPTIMIZERS
            and train.adam_state == "reset"
        )
        if self.local_updates and self.replicas_per_worker > 1:
            raise ConfigError(
                f"sync=kavg needs one replica per worker process, but this strategy runs "
                f"{self.replicas_per_worker} replicas in one process; start one process per "
                "accelerator instead (`actrec launch -n N -- actrec train ...` on one machine, "
                "srun on Slurm) with strategy auto or multi-worker"
            )

        keras.utils.set_random_seed(seed)
        scope = contextlib.nullcontext() if self.local_updates else strategy.scope()
        with _keras_policy(train.mixed_precision), scope:
            self.model = model_builder()
            self._check_model()
            self.distillation = None
            if distillation is not None:
                self.distillation = Distillation(distillation, self.model)
            self.optimizer = build_optimizer(train, self.trained_model)
        self.step_variable = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        self.mixing, self.mixing_seed = MixSettings.of(train), int(seed)
        self.mix_state = tf.Variable(  # this step's MixDraw, assigned by the host
            NO_MIX.as_array(), trainable=False, name="mix_state"
        )
        self.num_replicas_in_sync = (
            self.num_workers if self.local_updates else int(strategy.num_replicas_in_sync)
        )
        self.num_all_reduces = 0
        self.num_traces = 0
        self._steps_since_average = 0
        self._averaged_variables = variables_to_average(
            self.trained_model, self.optimizer, train, self.local_updates
        )
        # The adaptive schedule changes the batch size: after the first change, one
        # shape-relaxed trace serves every later size (the global batch is read dynamically).
        # No AutoGraph: the step's control flow is tf.while_loop / tf.cond already, and
        # converting the source of every function a step calls (the Keras layers' too)
        # costs seconds per training.
        self._train_function = tf.function(
            self._compiled_train_step, reduce_retracing=True, autograph=False
        )
        # Evaluation batches vary (the last one is partial): one relaxed trace serves all.
        self._evaluation_function = tf.function(
            self._compiled_evaluation_sums, reduce_retracing=True, autograph=False
        )
        self._average_function = tf.function(self._compiled_average, autograph=False)
        if self.local_updates and self.num_workers > 1:
            self._broadcast_from_first_worker()

    # --- construction -----------------------------------------------------------------

    def _check_model(self) -> None:
        if not getattr(self.model, "built", False) or not self.model.trainable_variables:
            raise ConfigError(
                "model_builder must return a built keras.Model with trainable weights (start "
                "it with keras.Input(shape=...)); got "
                f"{type(self.model).__name__} with {len(self.model.trainable_variables)} "
                "trainable variables"
            )

    def _broadcast_from_first_worker(self) -> None:
        """kavg: every worker starts from worker 0's values (one collective)."""
        variables = model_float_variables(self.trained_model) + moment_variables(self.optimizer)
        broadcast_from_first_worker(self.strategy, variables)

    # --- public API -------------------------------------------------------------------

    @property
    def trained_model(self) -> keras.Model:
        """The model whose trainable variables the optimizer updates: the student, or with
        distillation the student and its feature projection."""
        if self.distillation is None:
            return self.model
        return self.distillation.trained_model

    @property
    def local_dataset_feeds_the_replica(self) -> bool:
        """Whether this process runs one replica, on its CPU: its batches need no
        distributed dataset (`distribute`)."""
        devices = _worker_devices(self.strategy)
        return self.replicas_per_worker == 1 and all("CPU" in name.upper() for name in devices)

    def checkpoint_items(self) -> dict[str, keras.Model | keras.optimizers.Optimizer | tf.Variable]:
        """Objects for tf.train.Checkpoint(**items): model, optimizer, step_variable."""
        items = {
            "model": self.model,
            "optimizer": self.optimizer,
            "step_variable": self.step_variable,
        }
        if self.distillation is not None:
            items.update(self.distillation.checkpoint_items())
        return items

    def distribute(
        self, dataset_fn: Callable[[tf.distribute.InputContext], tf.data.Dataset]
    ) -> Iterable:
        """The batches of `dataset_fn(input_context)`, each replica's own.

        dataset_fn returns a tf.data.Dataset of PER-REPLICA batches (clips, labels) of
        per_replica_batch * accumulation_steps examples, reading only its input
        pipeline's share (input_context.input_pipeline_id of num_input_pipelines).
        allreduce over several replicas in this process, or onto an accelerator:
        strategy.distribute_datasets_from_function; kavg, or one CPU replica a process (a
        training on one machine, a CPU worker of a cluster): a local dataset of this
        worker's pipeline, which strategy.run hands to its one replica as it is.
        """
        import tensorflow as tf

        # A distributed dataset of one CPU replica only adds its multi-device iterator and
        # its CPU: the quickstart's flow TSN steps in 63 ms fed locally against 94 ms
        # (2-core AMD EPYC, `python benchmarks/cpu_step.py`).
        if not self.local_updates and not self.local_dataset_feeds_the_replica:
            return self.strategy.distribute_datasets_from_function(dataset_fn)
        context = tf.distribute.InputContext(
            num_input_pipelines=self.num_workers,
            input_pipeline_id=self.worker_index,
            num_replicas_in_sync=self.num_workers,
        )
        return dataset_fn(context)

    def synchronize(self) -> None:
        """Make every worker's model identical now (every worker must call it).

        kavg: an averaging round, unless none is due (no local step since the last).
        allreduce: the weights are already identical; the BatchNorm moving statistics that
        each replica updated from its own batches are averaged (one collective; nothing
        when the model has none or there is one replica).
        """
        if self.local_updates:
            if self._steps_since_average:
                self._average_now()
        elif self._averaged_variables and self.strategy.num_replicas_in_sync > 1:
            self._average_now()

    def evaluate(self, dataset_iterable) -> dict:
        """Global loss, accuracy, num_examples and confusion (int numpy [K, K], row = true
        class, column = predicted) over a finite `distribute(...)` output.

        Every worker must call it (the sums are reduced across workers at the end). The
        loss is the training criterion (with label smoothing).
        """
        import tensorflow as tf

        local_totals = None
        for batch in dataset_iterable:
            sums = self._evaluation_function(batch)
            replica_sums = self.strategy.experimental_local_results(sums)
            local_totals = (
                list(replica_sums)
                if local_totals is None
                else [total + new for total, new in zip(local_totals, replica_sums, strict=True)]
            )
        classes = int(self.model.output_shape[-1])
        if local_totals is None:
            local_totals = [tf.zeros([3 + classes * classes])] * self.replicas_per_worker
        totals = self._global_sum(local_totals).numpy()
        values = loss_and_accuracy(totals[:3])
        values["num_examples"] = round(float(totals[EXAMPLES]))
        values["confusion"] = totals[3:].reshape(classes, classes).round().astype(int)
        return values

    # --- evaluation --------------------------------------------------------------------

    def _replica_evaluation_sums(self, clips, labels):
        import tensorflow as tf

        logits = tf.cast(self.model(clips, training=False), tf.float32)
        labels = tf.cast(labels, tf.int32)
        losses = per_example_loss(labels, logits, self.label_smoothing)
        classes = logits.shape[-1]
        confusion = tf.math.confusion_matrix(
            labels, tf.argmax(logits, axis=-1), num_classes=classes, dtype=tf.float32
        )  # [K, K]
        statistics = batch_statistics(labels, logits, losses)  # [3]
        return tf.concat([statistics, tf.reshape(confusion, [-1])], axis=0)  # [3 + K*K]

    def _compiled_evaluation_sums(self, batch):
        clips, labels = batch[0], batch[1]
        if self.local_updates:
            return self._replica_evaluation_sums(clips, labels)
        return self.strategy.run(self._replica_evaluation_sums, args=(clips, labels))

    def _global_sum(self, local_totals):
        """Sum over every replica of the cluster of per-local-replica tensors [3]."""
        per_replica = self.strategy.experimental_distribute_values_from_function(
            lambda context: local_totals[
                context.replica_id_in_sync_group % self.replicas_per_worker
            ]
        )
        return self.strategy.reduce("SUM", per_replica, axis=None)


def build_trainer(
    strategy, recipe, num_classes: int, input_transform=None, teacher=None, class_weights=None
):
    """The recipe's DistributedTrainer on `strategy`: its model, optimizer and
    synchronisation (recipe.train), seeded by recipe.runtime.seed. input_transform: run on
    each batch before the model (e.g. the on-device clip finishing). teacher: the checked
    flow teacher of a distilled run (actrec.train.distillation.teacher.Teacher), or None.
    class_weights: float [num_classes] loss weights (train.class_balance weights), or None."""
    return DistributedTrainer(
        strategy,
        model_builder(recipe.model, recipe.data, num_classes),
        recipe.train,
        seed=recipe.runtime.seed,
        input_transform=input_transform,
        distillation=distillation_settings(teacher, recipe),
        class_weights=class_weights,
    )
