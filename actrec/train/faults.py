"""Fault injection: make a worker's loss NaN at a chosen step, to exercise divergence
recovery (actrec.train.divergence) on real runs. Off unless set; read here only.

    ACTREC_INJECT_NAN=WORKER:STEP[,WORKER:STEP...]

Worker WORKER (its task index; 0 on a single machine) replaces the clips of the batch of
global step STEP (1-based) with NaN before the step, once per process: the NaN goes through
the real forward pass, loss, gradients and (under allreduce) the gradient all-reduce, as a
damaged input would. A run rolled back past that step does not see it again, like a bad
batch that recovery skips.
"""

from __future__ import annotations

import os

from actrec.errors import ConfigError

ENVIRONMENT_VARIABLE = "ACTREC_INJECT_NAN"


def _parsed(text: str) -> set[tuple[int, int]]:
    faults = set()
    for item in filter(None, (part.strip() for part in text.split(","))):
        worker, _, step = item.partition(":")
        if not (worker.isdigit() and step.isdigit() and int(step) >= 1):
            raise ConfigError(
                f"{ENVIRONMENT_VARIABLE}={text!r}: write WORKER:STEP[,WORKER:STEP...] with a "
                "worker index and a global step >= 1, e.g. 1:5"
            )
        faults.add((int(worker), int(step)))
    return faults


class NanInjection:
    """The faults set for this worker (see the module docstring)."""

    def __init__(self, worker_index: int, environ=None):
        environ = os.environ if environ is None else environ
        everywhere = _parsed(environ.get(ENVIRONMENT_VARIABLE, ""))
        self._steps = {step for worker, step in everywhere if worker == worker_index}

    def batch(self, strategy, batch, global_step: int):
        """`batch` (clips, labels), with NaN clips when a fault is set for `global_step`
        (per-replica values are replaced on every local replica)."""
        if global_step not in self._steps:
            return batch
        self._steps.discard(global_step)
        import tensorflow as tf

        def poisoned(clips, labels):
            return clips + tf.constant(float("nan"), clips.dtype), labels

        clips, labels = batch
        if isinstance(clips, tf.Tensor):  # a local batch (kavg)
            return poisoned(clips, labels)
        return strategy.run(poisoned, args=(clips, labels))
