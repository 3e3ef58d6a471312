"""Rebuilding keras.applications functional networks with weightless layers inserted.

`keras.models.clone_model(..., call_function=...)` re-runs a functional graph layer by
layer; the call function sees each layer with its new input tensors and may transform
those inputs first. The layers are the original's own objects (Keras would clone each from
its config, building every weight again: 0.5 s of a quickstart TSM's 1.3 s build). Layers
that carry weights are never added or renamed, so a rebuilt network has the original's
weight list and loads the same weight files.
"""

from __future__ import annotations

from collections.abc import Callable

import keras

InputTransform = Callable[[keras.layers.Layer, object], object]
"""(cloned layer, its positional input: a tensor or a list of tensors) -> new input."""


def rebuild_with_input_transform(model: keras.Model, transform: InputTransform) -> keras.Model:
    """Returns functional `model` rebuilt where each layer's first positional input is
    replaced by `transform(layer, input)`, over the same layers and weights.

    The copy keeps the model's name and every layer name.
    """

    def call_function(layer, *arguments, **keyword_arguments):
        if arguments:
            arguments = (transform(layer, arguments[0]), *arguments[1:])
        return layer(*arguments, **keyword_arguments)

    rebuilt = keras.models.clone_model(
        model, clone_function=lambda layer: layer, call_function=call_function
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
