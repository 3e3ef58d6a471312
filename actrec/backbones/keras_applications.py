"""The builder every keras.applications family shares: the no-top network a spec names,
exactly as Keras loads its published weight file into it."""

from __future__ import annotations

import warnings

import keras

from actrec.backbones.spec import BackboneSpec


def keras_application(
    spec: BackboneSpec, input_shape: tuple[int | None, int | None, int]
) -> keras.Model:
    """Returns keras.applications' no-top network `spec.constructor`, randomly initialised.

    input_shape: [H, W, C]; C may differ from 3 (flow stacks). Output: the globally
    average-pooled features, [N, feature_width].
    """
    constructor = getattr(keras.applications, spec.constructor)
    with warnings.catch_warnings():
        # "This model usually expects 1 or 3 input channels": flow stacks have 2L.
        warnings.filterwarnings("ignore", message=".*input channels.*")
        warnings.filterwarnings("ignore", message=".*input_shape.*")
        return constructor(
            include_top=False,
            weights=None,
            input_shape=tuple(input_shape),
            pooling="avg",
            **spec.constructor_arguments,
        )
