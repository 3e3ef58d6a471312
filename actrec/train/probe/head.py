"""The linear probe: a classifier trained on cached clip features, whole epochs as array ops.

    features [N, D] -> standardised ((x - mean) / std, the training rows' statistics)
      -> logits = z W + b  [N, K]    W, b from zeros (the loss is convex)

One epoch is one tf.function over the rows in a seeded order: mini-batches of the recipe's
global batch (train.batch_size, its growth), each step's rate from the recipe's schedule
(actrec.train.schedule.learning_rate: coupling, warm-up, step / cosine decay), the
cross-entropy with train.label_smoothing plus coupled L2 on W (train.weight_decay; the bias
never decays), then SGD (train.momentum, nesterov) or Adam (Keras's defaults), as the
recipe's train.optimizer says; "adamw" decays W apart, w -= rate * weight_decay * w after
Adam's step (PyTorch's AdamW). Nothing decodes a video, so an epoch of a few hundred clips
takes milliseconds.

The standardisation is folded into the head at the end (`LinearHead.folded`): W' = W / std,
b' = b - (mean / std) W, so the trained model is the backbone and one Dense layer, the
network the recipe builds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from actrec.config.recipe import TrainConfig
from actrec.train.schedule import global_batch_size, learning_rate

STD_FLOOR = 1e-6
ADAM_BETAS = (0.9, 0.999)
ADAM_EPSILON = 1e-7  # Keras's Adam


@dataclass(frozen=True)
class LinearHead:
    """kernel float32 [D, K], bias float32 [K] on the raw features (standardisation folded
    in)."""

    kernel: np.ndarray
    bias: np.ndarray

    def logits(self, features: np.ndarray) -> np.ndarray:
        """features [..., D] -> logits [..., K]."""
        return features.astype(np.float32) @ self.kernel + self.bias


@dataclass(frozen=True)
class EpochResult:
    """epoch: from 0; steps: its optimiser steps; loss: the mean training loss of its
    steps; train_top1: the head's top-1 on every training row at its end; learning_rate:
    its first step's."""

    epoch: int
    steps: int
    loss: float
    train_top1: float
    learning_rate: float


def _standardisation(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean [D], std [D]) of the training rows, std floored at STD_FLOOR."""
    mean = features.mean(axis=0)
    return mean, np.maximum(features.std(axis=0), STD_FLOOR)


class HeadTraining:
    """W, b and the optimizer's slots as tf.Variables; `epoch` (a whole epoch) and `step`
    (one mini-batch, for benchmarks/probe_epoch.py's epoch through the backbone), each one
    tf.function."""

    def __init__(self, width: int, num_classes: int, train: TrainConfig):
        self.train = train
        self.kernel = tf.Variable(tf.zeros([width, num_classes]))
        self.bias = tf.Variable(tf.zeros([num_classes]))
        self.slots = [
            tf.Variable(tf.zeros_like(variable))
            for variable in (self.kernel, self.bias)
            for _ in range(2)
        ]  # SGD: momentum (the second unused); Adam: m, v of each variable
        self.updates = tf.Variable(0.0)
        self.epoch = tf.function(self._epoch)
        self.step = tf.function(self._step)

    def _gradients(self, rows, labels):
        train = self.train
        with tf.GradientTape() as tape:
            logits = tf.matmul(rows, self.kernel) + self.bias
            targets = tf.one_hot(labels, tf.shape(logits)[-1])
            if train.label_smoothing:
                count = tf.cast(tf.shape(logits)[-1], tf.float32)
                targets = targets * (1 - train.label_smoothing) + train.label_smoothing / count
            loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(targets, logits))
        kernel_gradient, bias_gradient = tape.gradient(loss, [self.kernel, self.bias])
        if train.optimizer != "adamw":  # coupled L2; AdamW decays apart (_apply)
            kernel_gradient += train.weight_decay * self.kernel
        return loss, [kernel_gradient, bias_gradient]

    def _apply(self, gradients, rate) -> None:
        train = self.train
        self.updates.assign_add(1.0)
        for index, (variable, gradient) in enumerate(
            zip((self.kernel, self.bias), gradients, strict=True)
        ):
            first, second = self.slots[2 * index], self.slots[2 * index + 1]
            if train.optimizer in ("adam", "adamw"):
                beta_1, beta_2 = ADAM_BETAS
                first.assign(beta_1 * first + (1 - beta_1) * gradient)
                second.assign(beta_2 * second + (1 - beta_2) * tf.square(gradient))
                corrected = rate * tf.sqrt(1 - beta_2**self.updates) / (1 - beta_1**self.updates)
                variable.assign_sub(corrected * first / (tf.sqrt(second) + ADAM_EPSILON))
                if train.optimizer == "adamw" and variable is self.kernel:  # decoupled
                    variable.assign_sub(rate * train.weight_decay * variable)
            else:  # Keras's SGD: the rate inside the momentum
                first.assign(train.momentum * first - rate * gradient)
                step = train.momentum * first - rate * gradient if train.nesterov else first
                variable.assign_add(step)

    def _step(self, rows, labels, rate):
        """rows float32 [B, D], labels int32 [B]: one update at `rate`; the loss."""
        loss, gradients = self._gradients(rows, labels)
        self._apply(gradients, rate)
        return loss

    def _epoch(self, rows, labels, order, rates, batch):
        """rows float32 [N, D], labels int32 [N], order int32 [N] (a permutation), rates
        float32 [steps]: one epoch of len(rates) steps of `batch` rows; the mean loss."""
        total = tf.constant(0.0)
        steps = tf.shape(rates)[0]
        for step in tf.range(steps):
            chosen = order[step * batch : (step + 1) * batch]
            loss, gradients = self._gradients(tf.gather(rows, chosen), tf.gather(labels, chosen))
            self._apply(gradients, rates[step])
            total += loss
        return total / tf.cast(steps, tf.float32)


def train_linear_head(
    features: np.ndarray,
    labels: np.ndarray,
    num_classes: int,
    train: TrainConfig,
    seed: int,
    on_epoch: Callable[[EpochResult, LinearHead], None] | None = None,
) -> LinearHead:
    """The head trained on `features` float32 [N, D] with `labels` int [N] for train.epochs
    epochs (see the module); on_epoch(result, the head so far) after each epoch."""
    features = np.asarray(features, np.float32)
    labels = np.asarray(labels, np.int32)
    count = features.shape[0]
    mean, std = _standardisation(features)
    rows = tf.constant((features - mean) / std)
    label_tensor = tf.constant(labels)
    training = HeadTraining(features.shape[1], num_classes, train)
    random = np.random.default_rng(seed)
    head = LinearHead(np.zeros([features.shape[1], num_classes], np.float32), np.zeros(num_classes))
    for epoch in range(train.epochs):
        batch = max(1, min(global_batch_size(train, epoch), count))
        steps = count // batch
        rates = np.array(
            [learning_rate(train, epoch, step, steps) for step in range(steps)], np.float32
        )
        order = random.permutation(count).astype(np.int32)
        loss = training.epoch(rows, label_tensor, tf.constant(order), tf.constant(rates), batch)
        head = _folded(training.kernel.numpy(), training.bias.numpy(), mean, std)
        if on_epoch is not None:
            top1 = float(np.mean(np.argmax(head.logits(features), axis=-1) == labels))
            on_epoch(EpochResult(epoch, steps, float(loss), top1, float(rates[0])), head)
    return head


def _folded(kernel: np.ndarray, bias: np.ndarray, mean: np.ndarray, std: np.ndarray) -> LinearHead:
    """The head on raw features: W' = W / std [D, K], b' = b - (mean / std) W [K]."""
    scaled = kernel / std[:, None]
    return LinearHead(scaled.astype(np.float32), (bias - mean @ scaled).astype(np.float32))
