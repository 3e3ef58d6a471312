"""Gradient accumulation: one replica's batch of k micro-batches, one after another.

A replica's batch is (clips [k * b, ...], labels [k * b]) for k accumulation steps of
micro-batch b. The micro-batches' gradients are summed, so the update equals one over the
whole batch while only one micro-batch's activations are alive at a time.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable

from actrec.errors import ConfigError


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


def summed_gradients(
    micro_batch_gradients: Callable, variables: list, clips, labels, accumulation_steps, replicas
):
    """Gradients summed over the micro-batches of one replica's batch, statistics [3].

    micro_batch_gradients(clips, labels, global_batch, accumulation_steps) -> (gradients,
    statistics [3]) of one micro-batch; replicas: the replicas whose batches make the global
    batch. clips [k * b, ...] -> [k, b, ...]; labels [k * b] -> [k, b]. A tf.while_loop
    with parallel_iterations=1 runs the micro-batches one after another, so only one
    micro-batch's activations are alive at a time.
    """
    import tensorflow as tf

    replica_batch = tf.shape(labels)[0]
    global_batch = tf.cast(replica_batch * replicas, tf.float32)
    if accumulation_steps == 1:
        return micro_batch_gradients(clips, labels, global_batch, 1)
    micro_batch = replica_batch // accumulation_steps
    micro_clips = tf.reshape(  # [k * b, ...] -> [k, b, ...]
        clips, tf.concat([[accumulation_steps, micro_batch], tf.shape(clips)[1:]], axis=0)
    )
    micro_labels = tf.reshape(labels, [accumulation_steps, micro_batch])  # [k, b]

    def body(index, gradient_sums, statistics_sum):
        gradients, statistics = micro_batch_gradients(
            micro_clips[index], micro_labels[index], global_batch, accumulation_steps
        )
        sums = [total + gradient for total, gradient in zip(gradient_sums, gradients, strict=True)]
        return index + 1, sums, statistics_sum + statistics

    initial = (
        tf.constant(0),
        [tf.zeros(variable.shape, variable.dtype) for variable in variables],
        tf.zeros([3]),
    )
    _, gradients, statistics = tf.while_loop(
        lambda index, *_: index < accumulation_steps, body, initial, parallel_iterations=1
    )
    return gradients, statistics
