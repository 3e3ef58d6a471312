"""How a network is being traced for a TFLite conversion: the forms of an op that LiteRT's
CPU delegate (XNNPACK) runs, where the form used everywhere else would leave it outside.

An op XNNPACK does not take runs in LiteRT's own kernel and cuts the delegated graph there.
Two of MoViNet's did (`python benchmarks/movinet_tflite_ops.py --file F` lists a file's):

- hard swish, x * relu6(x + 3) / 6, which TFLite's converter fuses into one HARD_SWISH: the
  fastest op in float32, but XNNPACK has no int8 HARD_SWISH. Traced for an int8 model it is
  written relu6(x + 3) * x / 6 instead, an ADD (its relu6 fused) and two MULs, int8 ops
  XNNPACK runs (and the frame count's reciprocal is shared by the cumulative pools);
- the skip's 3x3 average pool of stride 2, written as nine strided slices (so that every
  Keras backend counts only the real pixels at the border): XNNPACK takes no slice of
  stride 2. Traced for a float TFLite model it is TensorFlow's avg_pool (the same count),
  which TFLite runs as AVERAGE_POOL_2D; for an int8 one (XNNPACK pools float32 only) a
  depthwise sum of each window times its reciprocal count (docs/benchmarks.md, "MoViNet
  stream").

No Keras here: the exporters import this without building a network.
"""

from __future__ import annotations

import contextlib
import contextvars

_FORMS = contextvars.ContextVar("actrec_tflite_forms", default=frozenset())
TFLITE = "tflite"
INT8 = "int8"


@contextlib.contextmanager
def traced_for_tflite(int8: bool):
    """Within it, a network traces the forms its TFLite model runs fastest: its pools as
    ops, and for an `int8` model hard swish as separate ops and pools as depthwise sums."""
    token = _FORMS.set(frozenset({TFLITE, *([INT8] * int8)}))
    try:
        yield
    finally:
        _FORMS.reset(token)


def for_tflite() -> bool:
    """Whether a TFLite model is being traced now (its pools as ops)."""
    return TFLITE in _FORMS.get()


def for_int8() -> bool:
    """Whether an int8 TFLite model is being traced now (hard swish as separate ops, pools
    as depthwise sums, one reciprocal of the frame count)."""
    return INT8 in _FORMS.get()
