"""Fault injection: make a worker's loss NaN at a chosen step, to exercise divergence
recovery (actrec.train.life.divergence) on real runs. Off unless set; read here only.

    ACTREC_INJECT_NAN=WORKER:STEP[,WORKER:STEP...]

Worker WORKER (its task index; 0 on a single machine) replaces the clips of the batch of
global step STEP (1-based) with NaN in that step, once per process: the NaN goes through
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
    """The faults set for this worker (see the module docstring).

    The training clips are finished from uint8 crops where the model runs (the input
    transform), so the NaN is added there: `wrap` returns the transform plus a float
    variable that `arm` sets to NaN for the step of a fault and to 0 otherwise.
    """

    def __init__(self, worker_index: int, environ=None):
        environ = os.environ if environ is None else environ
        everywhere = _parsed(environ.get(ENVIRONMENT_VARIABLE, ""))
        self._steps = {step for worker, step in everywhere if worker == worker_index}
        self._offset = None  # a tf.Variable float32 scalar, once `wrap` made one

    def wrap(self, input_transform):
        """`input_transform` (clips -> float clips) plus the injected value; the transform
        itself when no fault is set for this worker."""
        if not self._steps:
            return input_transform
        import tensorflow as tf

        self._offset = tf.Variable(0.0, trainable=False, name="injected_nan")
        offset = self._offset
        return lambda inputs: tf.nest.map_structure(  # (and a distillation teacher's clips)
            lambda clips: clips + tf.cast(offset, tf.float32), input_transform(inputs)
        )

    def arm(self, global_step: int) -> bool:
        """Make the next step's clips NaN when a fault is set for `global_step` (1-based),
        once; else leave them as they are. Returns whether it fired."""
        fired = global_step in self._steps
        self._steps.discard(global_step)
        if self._offset is not None:
            self._offset.assign(float("nan") if fired else 0.0)
        return fired
