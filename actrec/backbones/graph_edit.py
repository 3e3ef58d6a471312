"""Rebuilding keras.applications functional networks with weightless layers inserted.

`keras.models.clone_model(..., call_function=...)` re-runs a functional graph layer by
layer; the call function sees each cloned layer (same class, config and name as the
original) with its new input tensors and may transform those inputs first. Layers that
carry weights are never added or renamed, so a rebuilt network has the original's weight
list and loads the same weight files.
"""

from __future__ import annotations

from collections.abc import Callable

import keras

InputTransform = Callable[[keras.layers.Layer, object], object]
"""(cloned layer, its positional input: a tensor or a list of tensors) -> new input."""


def rebuild_with_input_transform(
    model: keras.Model,
    transform: InputTransform,
    clone_function: Callable[[keras.layers.Layer], keras.layers.Layer] | None = None,
) -> keras.Model:
    """Returns a copy of functional `model` where each layer's first positional input is
    replaced by `transform(layer, input)` (fresh, randomly initialised weights).

    clone_function: layer -> the copy's layer (keras.models.clone_model's; default: a new
    layer of the same class and config). The copy keeps the model's name and every layer
    name.
    """

    def call_function(layer, *arguments, **keyword_arguments):
        if arguments:
            arguments = (transform(layer, arguments[0]), *arguments[1:])
        return layer(*arguments, **keyword_arguments)

    rebuilt = keras.models.clone_model(
        model, clone_function=clone_function, call_function=call_function
    )
    # clone_model names the copy after the original; make it explicit.
    rebuilt.name = model.name
    return rebuilt


def producing_layer_name(tensor) -> str | None:
    """Returns the name of the layer whose output `tensor` (a symbolic tensor) is."""
    history = getattr(tensor, "_keras_history", None)
    if history is None:
        return None
    return history.operation.name
