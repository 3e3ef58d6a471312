"""The loss and the [loss sum, correct, examples] statistics of a training or evaluation
batch, and the loss / accuracy they give.

Sums, not means: a step's statistics are all-reduced (SUM) with its gradients, and an
evaluation's are summed over batches and workers, before dividing by the examples.
"""

from __future__ import annotations

import math

# Positions in the statistics vector [3] each step / evaluation batch yields.
LOSS_SUM, CORRECT, EXAMPLES = 0, 1, 2


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


def loss_and_accuracy(statistics) -> dict[str, float]:
    """{"loss", "accuracy"} of summed statistics [3]; NaN when they hold no example."""
    examples = float(statistics[EXAMPLES])
    if examples <= 0:
        return {"loss": math.nan, "accuracy": math.nan}
    return {
        "loss": float(statistics[LOSS_SUM]) / examples,
        "accuracy": float(statistics[CORRECT]) / examples,
    }
