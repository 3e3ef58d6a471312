"""How many threads TensorFlow splits one CPU op over (runtime.threads_per_op)."""

from __future__ import annotations

from actrec.config.bounds import MAX_THREADS_PER_OP
from actrec.errors import ConfigError


def use_threads_per_op(threads: int | None) -> bool:
    """Set TensorFlow's intra-op parallelism to `threads` (None: leave TensorFlow's default,
    a thread a core). It can be set only before the process's first TensorFlow op starts
    the runtime: False when that has happened and the runtime keeps another value."""
    if threads is None:
        return True
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise ConfigError(f"runtime.threads_per_op={threads!r} is not valid; use a whole number")
    if not 1 <= threads <= MAX_THREADS_PER_OP:  # TensorFlow would make them all
        raise ConfigError(
            f"runtime.threads_per_op={threads} is not valid; use 1 to {MAX_THREADS_PER_OP} or null"
        )
    import tensorflow as tf  # inside: the CLI imports this module before TensorFlow

    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
    except RuntimeError:  # the runtime has started
        return tf.config.threading.get_intra_op_parallelism_threads() == threads
    return True
