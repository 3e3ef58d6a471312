"""One training step, from a batch to the parameter update, top to bottom.

This page is the step `DistributedTrainer.train_step` (actrec/train/loop/trainer.py) takes; loop.py
builds what it works with (model, optimizer, strategy, the variables an averaging round
averages) and evaluates. Read it in order:

1. `train_step` (the host, once per step): check that the batch splits into the
   accumulation steps, set the optimizer's rate (and draw the step's mixing), run the
   compiled step, count the step; under kavg, every K-th step run an averaging round (7).
2. `_compiled_train_step` (inside tf.function): `strategy.run` of the replica step on every
   replica (allreduce); under kavg the process's one replica runs it directly.
3. `_replica_train_step` (one replica): finish the clips on the device (input_transform),
   sum the gradients of its micro-batches (4), then under allreduce ONE all-reduce (SUM)
   of the gradients with the step's [loss sum, correct, examples] packed in, and
   `optimizer.apply` (6).
4. `_summed_gradients` (gradient accumulation): the replica's batch clips [k * b, ...]
   as k micro-batches [k, b, ...], one after another in a tf.while_loop, gradients summed,
   so only one micro-batch's activations are alive at a time.
5. `_micro_batch_gradients` (forward, loss, gradients): with mixup / cutmix the clips
   mixed with themselves reversed (the host's draw of step 1, actrec.train.loop.mixing);
   logits [b, classes] float32; per-example cross-entropy (label smoothing; of the mixed
   targets under mixup / cutmix; accuracy counts the clips' own labels), plus, distilling
   from a flow teacher (actrec.train.distillation.loss), distill_weight x the per-example
   feature MSE between the student's (projected) features and the frozen teacher's; each
   example's loss x its class's weight (train.class_balance weights); the sum divided by
   the GLOBAL batch, so the all-reduced SUM of the replicas' gradients is the gradient of
   the global mean loss; regularisation losses counted once over replicas and
   micro-batches; the loss scaled (float16 loss scaling) and differentiated.
6. `optimizer.apply` (Keras, built by actrec.train.loop.optimizer): unscale the gradients and
   skip a non-finite step (float16 only), clip their global norm (`clip_norm`), Keras'
   own decay (weight_decay_mode "decoupled" with sgd / adam), then per variable
   `update_step` (adamw: first its decay at the variable's rate):
   `decayed_gradient_and_rate` below (coupled L2 g + weight_decay * decay_mult * w; rate
   lr * lr_mult of the variable's parameter group, actrec.train.loop.param_groups), then
   Keras' SGD / Adam update. Keras' own gradient all-reduce is switched off: step 3 has
   reduced.
7. `_average_now` (kavg, K-step averaging, Zhou & Cong 2018): every float model variable
   (and Adam's moments by `adam_state`) <- its mean over the workers, one all-reduce
   (actrec.train.loop.averaging); with adam_state "reset" the moments are then zeroed.

Shapes: a replica's batch is (clips [k * b, ...], labels int32 [k * b]) for k accumulation
steps of micro-batch b.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import TYPE_CHECKING

from actrec.errors import ConfigError
from actrec.train.loop.averaging import average_round
from actrec.train.loop.mixing import (
    MixSettings,
    mix_draw,
    mixed_clips,
    mixed_targets,
    step_generator,
)
from actrec.train.loop.step_statistics import (
    batch_statistics,
    distillation_statistics,
    loss_and_accuracy,
    per_example_loss,
    statistics_size,
)

if TYPE_CHECKING:
    import keras
    import numpy as np
    import tensorflow as tf

    from actrec.train.distillation.loss import Distillation


class TrainStep:
    """The training step of actrec.train.loop.trainer.DistributedTrainer (its base class, which
    sets these attributes)."""

    model: keras.Model
    optimizer: keras.optimizers.Optimizer  # a LossScaleOptimizer around it under float16
    strategy: tf.distribute.Strategy
    step_variable: tf.Variable  # int64 optimizer steps
    label_smoothing: float
    mixing: MixSettings | None  # train.mixup / cutmix (actrec.train.loop.mixing), None: off
    mixing_seed: int
    mix_state: tf.Variable  # float32 [6]: this step's MixDraw.as_array()
    class_weights: np.ndarray | None  # float32 [classes] loss weights (train.class_balance)
    input_transform: Callable[[tf.Tensor], tf.Tensor] | None
    local_updates: bool  # kavg: local variables, one replica per worker
    kavg_steps: int
    reset_adam_state: bool  # kavg with Adam and adam_state "reset"
    num_replicas_in_sync: int
    num_all_reduces: int
    num_traces: int
    _steps_since_average: int
    _averaged_variables: list[keras.Variable]
    _train_function: Callable[..., tf.Tensor]  # tf.function(_compiled_train_step)
    _average_function: Callable[[], None]  # tf.function(_compiled_average)
    distillation: Distillation | None  # a flow teacher (actrec.train.distillation.loss)
    trained_model: keras.Model  # the model the optimizer trains (student + projection)

    @property
    def step(self) -> int:
        """Optimizer steps done (restored with step_variable from a checkpoint)."""
        return int(self.step_variable.numpy())

    # 1. The host, once per step ---------------------------------------------------------

    def train_step(
        self, batch, learning_rate: float, accumulation_steps: int = 1
    ) -> dict[str, float]:
        """One optimizer update over the global batch; {"loss", "accuracy"} of the batch.

        batch: one element of `distribute(...)`: (clips, labels), each replica's holding
            accumulation_steps micro-batches.
        learning_rate: assigned to the optimizer's rate variable (no retracing).
        allreduce: loss / accuracy are global (all replicas, from the gradient
        all-reduce). kavg: they are this worker's own (local steps do not communicate).
        """
        accumulation_steps = checked_accumulation_steps(self.strategy, batch, accumulation_steps)
        self.optimizer.learning_rate = float(learning_rate)
        if self.mixing is not None:  # this step's mixup / cutmix, drawn on the host
            height, width = self.model.inputs[0].shape[-3:-1]  # [B, ..., H, W, C]
            generator = step_generator(self.mixing_seed, self.step)
            self.mix_state.assign(mix_draw(self.mixing, generator, height, width).as_array())
        statistics = self._train_function(batch, accumulation_steps)
        if not self.local_updates:
            self.num_all_reduces += 1
        self.step_variable.assign_add(1)
        if self.local_updates:
            self._steps_since_average += 1
            if self.step % self.kavg_steps == 0:
                self._average_now()
        return loss_and_accuracy(statistics.numpy())

    # 2. Inside tf.function: every replica -------------------------------------------------

    def _compiled_train_step(self, batch, accumulation_steps: int) -> tf.Tensor:
        self.num_traces += 1  # runs only while tracing
        clips, labels = batch
        if self.local_updates:
            return self._replica_train_step(clips, labels, accumulation_steps)
        statistics = self.strategy.run(
            self._replica_train_step, args=(clips, labels, accumulation_steps)
        )
        return self.strategy.experimental_local_results(statistics)[0]

    # 3. One replica: gradients, (all-reduce,) update ---------------------------------------

    def _replica_train_step(self, clips, labels, accumulation_steps: int) -> tf.Tensor:
        """One replica's part of a step: gradients, (all-reduce,) update; statistics [3]."""
        import tensorflow as tf

        if self.input_transform is not None:  # e.g. finishing uint8 crops on the device
            clips = self.input_transform(clips)
        gradients, statistics = self._summed_gradients(clips, labels, accumulation_steps)
        if not self.local_updates:
            context = tf.distribute.get_replica_context()
            reduced = context.all_reduce("SUM", [*gradients, statistics])
            gradients, statistics = reduced[:-1], reduced[-1]
        self.optimizer.apply(gradients, self.trained_model.trainable_variables)  # 6.
        return statistics

    # 4. Gradient accumulation: k micro-batches, one after another --------------------------

    def _summed_gradients(self, clips, labels, accumulation_steps: int):
        """Gradients summed over the micro-batches of one replica's batch, statistics [3].

        clips [k * b, ...] -> [k, b, ...]; labels [k * b] -> [k, b]. A tf.while_loop with
        parallel_iterations=1 runs the micro-batches one after another, so only one
        micro-batch's activations are alive at a time; the update equals one over the
        whole batch.
        """
        import tensorflow as tf

        replicas = 1 if self.local_updates else self.num_replicas_in_sync
        variables = self.trained_model.trainable_variables
        replica_batch = tf.shape(labels)[0]
        global_batch = tf.cast(replica_batch * replicas, tf.float32)
        if accumulation_steps == 1:
            return self._micro_batch_gradients(clips, labels, global_batch, 1)
        micro_batch = replica_batch // accumulation_steps
        micro_clips = tf.nest.map_structure(  # [k * b, ...] -> [k, b, ...] (and the teacher's)
            lambda part: tf.reshape(
                part, tf.concat([[accumulation_steps, micro_batch], tf.shape(part)[1:]], axis=0)
            ),
            clips,
        )
        micro_labels = tf.reshape(labels, [accumulation_steps, micro_batch])  # [k, b]

        def body(index, gradient_sums, statistics_sum):
            gradients, statistics = self._micro_batch_gradients(
                tf.nest.map_structure(lambda part: part[index], micro_clips),
                micro_labels[index],
                global_batch,
                accumulation_steps,
            )
            sums = [
                total + gradient for total, gradient in zip(gradient_sums, gradients, strict=True)
            ]
            return index + 1, sums, statistics_sum + statistics

        initial = (
            tf.constant(0),
            [tf.zeros(variable.shape, variable.dtype) for variable in variables],
            tf.zeros([statistics_size(self.distillation is not None)]),
        )
        _, gradients, statistics = tf.while_loop(
            lambda index, *_: index < accumulation_steps, body, initial, parallel_iterations=1
        )
        return gradients, statistics

    # 5. Forward, loss, gradients of one micro-batch ----------------------------------------

    def _micro_batch_gradients(self, clips, labels, global_batch, accumulation_steps: int):
        """(gradients of the global-mean loss share of clips [b, ...] (distilled: (student
        clips, teacher clips)), statistics [3] (distilled: [5]))."""
        import tensorflow as tf

        variables = self.trained_model.trainable_variables
        with tf.GradientTape() as tape:
            labels = tf.cast(labels, tf.int32)
            if self.mixing is not None:  # mixup / cutmix: the clips and their soft targets
                clips = mixed_clips(clips, self.mix_state)
            if self.distillation is None:
                logits = tf.cast(self.model(clips, training=True), tf.float32)  # [b, classes]
                feature_losses = None
            else:  # clips: (student's, teacher's); the feature losses [b]
                logits, feature_losses = self.distillation.logits_and_feature_losses(clips)
            if self.mixing is None:
                cross_entropy = per_example_loss(labels, logits, self.label_smoothing)  # [b]
            else:
                targets = mixed_targets(
                    labels, self.mix_state, logits.shape[-1], self.label_smoothing
                )
                cross_entropy = tf.nn.softmax_cross_entropy_with_logits(targets, logits)
            losses = cross_entropy
            if feature_losses is not None:
                losses = cross_entropy + self.distillation.weight * feature_losses
            if self.class_weights is not None:  # train.class_balance weights: per example
                losses = losses * tf.gather(tf.constant(self.class_weights), labels)
            loss = tf.reduce_sum(losses) / global_batch
            regularisers = self.trained_model.losses
            if regularisers:  # counted once over replicas and micro-batches
                replicas = 1 if self.local_updates else self.num_replicas_in_sync
                loss += tf.add_n(regularisers) / float(replicas * accumulation_steps)
            scaled_loss = self.optimizer.scale_loss(loss)
        gradients = tape.gradient(scaled_loss, variables)
        gradients = [
            tf.zeros(variable.shape, variable.dtype)
            if gradient is None
            else tf.convert_to_tensor(gradient)
            for gradient, variable in zip(gradients, variables, strict=True)
        ]
        statistics = batch_statistics(labels, logits, losses)
        if feature_losses is not None:
            statistics = tf.concat(
                [statistics, distillation_statistics(cross_entropy, feature_losses)], axis=0
            )
        return gradients, statistics

    # 7. kavg: an averaging round -------------------------------------------------------------

    def _average_now(self) -> None:
        self._average_function()
        self.num_all_reduces += 1
        self._steps_since_average = 0

    def _compiled_average(self) -> None:
        """One averaging round: every replica's variables <- their mean over replicas."""
        average_round(
            self.strategy, self._averaged_variables, self.optimizer, self.reset_adam_state
        )


# 6. One variable's update, inside optimizer.apply after the global-norm clipping ------------


def decayed_gradient_and_rate(gradient, variable, learning_rate, lr_mult: float, decay: float):
    """(gradient, rate) of one variable for Keras' SGD / Adam `update_step`: coupled L2
    gradient + decay * w (decay = weight_decay * decay_mult), rate learning_rate * lr_mult
    (actrec.train.loop.optimizer wires it into the optimizer)."""
    from keras import ops

    if decay:
        gradient = ops.add(
            ops.cast(gradient, variable.dtype),
            ops.multiply(ops.cast(decay, variable.dtype), variable),
        )
    if lr_mult != 1.0:
        learning_rate = ops.multiply(learning_rate, lr_mult)
    return gradient, learning_rate


# 1. The check of train_step's accumulation steps --------------------------------------------


def checked_accumulation_steps(strategy, batch, accumulation_steps) -> int:
    """`accumulation_steps` as a Python int (one trace per value); ConfigError when it is
    not a whole number >= 1 or does not split a replica's batch of `batch` evenly."""
    if (
        isinstance(accumulation_steps, bool)
        or not isinstance(accumulation_steps, numbers.Integral)
        or accumulation_steps < 1
    ):
        raise ConfigError(
            f"accumulation_steps={accumulation_steps!r} is not valid; use a whole number >= 1"
        )
    accumulation_steps = int(accumulation_steps)  # a Python int: one trace per value
    labels = strategy.experimental_local_results(batch[1])[0]
    size = labels.shape[0]
    if size is not None and size % accumulation_steps:
        raise ConfigError(
            f"a replica's batch of {size} examples cannot be split into "
            f"{accumulation_steps} equal micro-batches; make the per-replica batch "
            "per_replica_batch * accumulation_steps"
        )
    return accumulation_steps
