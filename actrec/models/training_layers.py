"""A Keras network with the layers actrec trains faster on TensorFlow swapped in.

BatchNormalization -> FusedBatchNormalization (actrec.models.fused_batch_norm) and
DepthwiseConv2D -> SmallInputDepthwiseConv2D (actrec.models.small_depthwise): subclasses
that compute Keras' values, faster in training, and are Keras' layers in inference.
"""

from __future__ import annotations

import keras


def training_layer_class(layer: keras.layers.Layer) -> type | None:
    """The actrec subclass that trains `layer` (a layer of exactly a Keras class it
    replaces), else None."""
    from actrec.models.fused_batch_norm import FusedBatchNormalization
    from actrec.models.small_depthwise import SmallInputDepthwiseConv2D

    replacements = {
        keras.layers.BatchNormalization: FusedBatchNormalization,
        keras.layers.DepthwiseConv2D: SmallInputDepthwiseConv2D,
    }
    return replacements.get(type(layer))


def weight_class(layer: keras.layers.Layer) -> type:
    """The Keras class whose weights `layer` holds: the replaced class for actrec's
    training subclasses, else the layer's own."""
    for keras_class in (keras.layers.BatchNormalization, keras.layers.DepthwiseConv2D):
        if isinstance(layer, keras_class):
            return keras_class
    return type(layer)


def with_training_layers(model: keras.Model) -> keras.Model:
    """Returns functional `model` with each layer that `training_layer_class` names
    replaced by that class, of the same config and name (new, unbuilt: meant for a network
    whose weights are not loaded yet); every other layer is the original object. The copy
    keeps the model's name, and its weight list is the original's."""

    def swapped(layer):
        replacement = training_layer_class(layer)
        return layer if replacement is None else replacement.from_config(layer.get_config())

    copy = keras.models.clone_model(model, clone_function=swapped)
    copy.name = model.name
    return copy
