"""The loss and the [loss sum, correct, examples] statistics of a training or evaluation
batch, and the loss / accuracy they give.

Sums, not means: a step's statistics are all-reduced (SUM) with its gradients, and an
evaluation's are summed over batches and workers, before dividing by the examples.
"""

from __future__ import annotations

import math

# Positions in the statistics vector [3] each step / evaluation batch yields; a distilled
# step's [5] adds its cross-entropy and feature-loss sums (actrec.train.distillation.loss).
LOSS_SUM, CORRECT, EXAMPLES = 0, 1, 2
CROSS_ENTROPY_SUM, FEATURE_LOSS_SUM = 3, 4


def statistics_size(distilled: bool) -> int:
    """The length of a training step's statistics vector."""
    return 5 if distilled else 3


def per_example_loss(labels, logits, label_smoothing: float):
    """Cross-entropy from logits [B, classes] float32 of int labels [B]: [B]; with label
    smoothing the targets are (1 - s) one-hot + s / classes."""
    import tensorflow as tf

    if not label_smoothing:
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    classes = tf.shape(logits)[-1]
    smoothing = label_smoothing
    targets = tf.one_hot(labels, classes) * (1.0 - smoothing) + smoothing / tf.cast(
        classes, tf.float32
    )
    return tf.nn.softmax_cross_entropy_with_logits(labels=targets, logits=logits)


def batch_statistics(labels, logits, losses):
    """[loss sum, correct, examples] float32 [3] of one batch (losses: per example [B])."""
    import tensorflow as tf

    predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
    correct = tf.reduce_sum(tf.cast(tf.equal(predictions, labels), tf.float32))
    examples = tf.cast(tf.size(labels), tf.float32)
    return tf.stack([tf.reduce_sum(losses), correct, examples])


def distillation_statistics(cross_entropy, feature_losses):
    """[cross-entropy sum, feature-loss sum] float32 [2] of a distilled batch (each [B])."""
    import tensorflow as tf

    return tf.stack([tf.reduce_sum(cross_entropy), tf.reduce_sum(feature_losses)])


def loss_and_accuracy(statistics) -> dict[str, float]:
    """{"loss", "accuracy"} of summed statistics [3] (a distilled step's [5]: also
    "cross_entropy" and "feature_mse", the unweighted feature loss); NaN when they hold no
    example."""
    examples = float(statistics[EXAMPLES])
    names = ["loss", "accuracy"] + (["cross_entropy", "feature_mse"] if len(statistics) > 3 else [])
    if examples <= 0:
        return dict.fromkeys(names, math.nan)
    values = {
        "loss": float(statistics[LOSS_SUM]) / examples,
        "accuracy": float(statistics[CORRECT]) / examples,
    }
    if len(statistics) > 3:
        values["cross_entropy"] = float(statistics[CROSS_ENTROPY_SUM]) / examples
        values["feature_mse"] = float(statistics[FEATURE_LOSS_SUM]) / examples
    return values
