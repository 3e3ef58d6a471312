"""Keras's own hard swish layers (`Activation("hard_swish")`, keras.applications'
MobileNetV3) traced for an int8 TFLite model as ops LiteRT's CPU delegate runs in int8.

Keras computes hard swish as x * relu6(x + 3) / 6, which TFLite's converter fuses into one
HARD_SWISH op; XNNPACK has no int8 HARD_SWISH, so in an int8 MobileNetV3 every one runs in
LiteRT's own kernel and cuts the delegated graph there (19 times in MobileNetV3-Small).
While `int8_hard_swish(models)` is open, those layers compute relu6(x + 3) * x / 6, the same
function up to float rounding, as an ADD (its relu6 fused) and two MULs, which XNNPACK runs
in int8: MobileNetV3-Small's int8 step at 224 px runs about 6x faster on one x86 core
(`python benchmarks/int8_hard_swish.py`). actrec's own networks (MoViNet) read
actrec.backbones.tflite_forms instead; this is for layers Keras builds.

Keras is imported where it is used: the exporters import this module, and a TFLite runner
beside them needs no Keras.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence


def _separate_hard_swish(x):
    """relu6(x + 3) * x / 6: [...] -> [...], hard swish in ops XNNPACK runs in int8."""
    import keras

    return keras.ops.relu6(x + 3.0) * x * (1.0 / 6.0)


@contextlib.contextmanager
def int8_hard_swish(models: Sequence) -> Iterator[int]:
    """Within it, each Keras `Activation` layer of `models` (keras.Model, nested models
    included) that computes hard swish computes it as separate ops; yields how many layers;
    restores them when it closes."""
    import keras

    hard_swish = keras.activations.hard_silu  # keras.activations.hard_swish is this one
    swapped = []
    for model in models:
        # Keras 3 has no public walk over a model's nested layers: its tracker's.
        for layer in model._flatten_layers(include_self=False, recursive=True):
            if isinstance(layer, keras.layers.Activation) and (layer.activation is hard_swish):
                swapped.append((layer, layer.activation))
                layer.activation = _separate_hard_swish
    try:
        yield len(swapped)
    finally:
        for layer, activation in swapped:
            layer.activation = activation
