"""Whether hard swish, x * relu6(x + 3) / 6, is being traced as separate ops.

Written so, TFLite's converter fuses hard swish into one HARD_SWISH op: the fastest there
is in float32, but XNNPACK (LiteRT's CPU delegate) has no int8 HARD_SWISH, so an int8 model
runs each one in LiteRT's own kernel, outside the delegate, and cuts the delegated graph
there. Inside `hard_swish_as_separate_ops()` (what actrec's int8 TFLite conversion traces
in) a network's hard swish is written relu6(x + 3) * (x / 6) instead (MoViNet's:
actrec.backbones.movinet.layers.hard_swish), which the converter keeps as an ADD (its relu6
fused) and two MULs, int8 ops XNNPACK runs: a MoViNet-A0 stream step (58 hard swishes) went
from 6.7 ms to 2.1 ms a frame on one core (docs/benchmarks.md, "MoViNet stream").

No Keras here: the exporters import this without building a network.
"""

from __future__ import annotations

import contextlib
import contextvars

_SEPARATE_OPS = contextvars.ContextVar("actrec_hard_swish_as_separate_ops", default=False)


@contextlib.contextmanager
def hard_swish_as_separate_ops():
    """Within it, `separate_ops()` is true: hard swish traces as three ops a TFLite
    delegate runs in int8, not as the form TFLite fuses into HARD_SWISH."""
    token = _SEPARATE_OPS.set(True)
    try:
        yield
    finally:
        _SEPARATE_OPS.reset(token)


def separate_ops() -> bool:
    """Whether hard swish is to be written relu6(x + 3) * (x / 6) now."""
    return _SEPARATE_OPS.get()
