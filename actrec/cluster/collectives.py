"""Small agreements between the workers of a run: one all-reduce each.

The chief decides some things alone (the run folder's verdict, the probed batch); these
carry its decision to every worker, so that all of them go on, or stop, together.
"""

from __future__ import annotations


def chief_values(strategy, values: list[float], is_chief: bool, num_workers: int) -> list[float]:
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


def agreed_counts(strategy, flags: list[bool], num_workers: int) -> list[int]:
    """How many workers have each of `flags` set (one all-reduce across workers)."""
    if num_workers <= 1:
        return [int(flag) for flag in flags]
    import tensorflow as tf

    values = tf.constant([1.0 if flag else 0.0 for flag in flags])

    def count():  # every replica of a worker holds its worker's flags
        return tf.distribute.get_replica_context().all_reduce("SUM", values)

    result = strategy.experimental_local_results(strategy.run(count))[0]
    replicas_per_worker = strategy.num_replicas_in_sync / num_workers
    return [round(float(value) / replicas_per_worker) for value in result.numpy()]


def agreed_flag(strategy, flag: bool, num_workers: int) -> bool:
    """True when any worker has `flag` set (one scalar all-reduce across workers)."""
    return agreed_counts(strategy, [flag], num_workers)[0] > 0
