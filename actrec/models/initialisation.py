"""Loading ImageNet weight files into actrec backbones, and TSN cross-modality init.

A published file is loaded into the plain keras.applications network it was written from
(RGB, 3 channels) exactly as Keras loads it; its weights are then copied, layer by layer
in order, into actrec's backbone, which may differ by weightless layers (TemporalShift,
EfficientNet's rescaling) and by its number of input channels (flow: 2L). A weight whose
shape differs only on the input-channel axis (the first convolution's kernel, EfficientNet's
input Normalization statistics) is averaged over the RGB channels and replicated to the
2L flow channels (Wang et al. 2016, TSN cross-modality pre-training).
"""

from __future__ import annotations

from pathlib import Path

import keras
import numpy as np

from actrec.backbones.build import build_plain_backbone
from actrec.backbones.spec import BackboneSpec
from actrec.errors import WeightsError


def layers_with_weights(model: keras.Model) -> list[keras.layers.Layer]:
    """Returns the layers of `model` that own weights, in the model's layer order."""
    return [layer for layer in model.layers if layer.weights]


def cross_modality_weight(source: np.ndarray, target_shape: tuple[int, ...]) -> np.ndarray:
    """Returns `source` averaged over the one axis where its shape differs from
    `target_shape`, replicated to the target's size on that axis.

    For a first convolution: [kh, kw, 3, F] -> mean over 3 -> [kh, kw, 2L, F], every input
    channel equal to the RGB mean kernel.
    """
    different = [
        axis
        for axis, (have, want) in enumerate(zip(source.shape, target_shape, strict=True))
        if have != want
    ]
    if len(different) != 1:
        raise WeightsError(
            f"cannot map a weight of shape {source.shape} to shape {target_shape}: "
            "cross-modality initialisation only changes the number of input channels"
        )
    axis = different[0]
    mean = source.mean(axis=axis, keepdims=True)
    return np.repeat(mean, target_shape[axis], axis=axis).astype(source.dtype)


def _weight_class(layer: keras.layers.Layer) -> type:
    """The class whose weights `layer` holds: BatchNormalization for its fused subclass
    (actrec.backbones.fused_batch_norm), else the layer's own."""
    if isinstance(layer, keras.layers.BatchNormalization):
        return keras.layers.BatchNormalization
    return type(layer)


def copy_backbone_weights(source: keras.Model, target: keras.Model) -> None:
    """Copies every weight of `source` into `target` (layers paired in order, classes and
    names checked); weights that differ only in input channels get the cross-modality map.
    """
    copy_layer_weights(source, target, layers_with_weights(source), layers_with_weights(target))


def copy_layer_weights(source, target, source_layers: list, target_layers: list) -> None:
    """Copies the weights of `source_layers` (of model `source`) into `target_layers` (of
    `target`), paired in order, as copy_backbone_weights does."""
    if len(source_layers) != len(target_layers):
        raise WeightsError(
            f"cannot copy weights from {source.name!r} ({len(source_layers)} layers with "
            f"weights) into {target.name!r} ({len(target_layers)}): not the same network"
        )
    for source_layer, target_layer in zip(source_layers, target_layers, strict=True):
        if _weight_class(source_layer) is not _weight_class(target_layer):
            raise WeightsError(
                f"cannot copy weights of layer {source_layer.name!r} "
                f"({type(source_layer).__name__}) into {target_layer.name!r} "
                f"({type(target_layer).__name__}): the networks differ"
            )
        values = []
        for source_weight, target_weight in zip(
            source_layer.weights, target_layer.weights, strict=True
        ):
            value = keras.ops.convert_to_numpy(source_weight)
            target_shape = tuple(target_weight.shape)
            if value.shape != target_shape:
                value = cross_modality_weight(value, target_shape)
            values.append(value)
        target_layer.set_weights(values)
        finalize_layer_state(target_layer)


def finalize_layer_state(layer: keras.layers.Layer) -> None:
    """Refreshes what a layer derives from its weights (an adapted Normalization caches its
    mean and variance as tensors); `set_weights` alone leaves them stale. Keras's own
    loaders do this too."""
    if hasattr(layer, "finalize_state"):
        layer.finalize_state()


def load_imagenet_weights(backbone: keras.Model, spec: BackboneSpec, weights_path: Path) -> None:
    """Loads the published no-top weight file at `weights_path` into `backbone` (the actrec
    backbone of registry entry `spec`, RGB or flow, with or without temporal shift).
    """
    height, width, _ = backbone.input_shape[1:]
    reference = build_plain_backbone(spec, (height, width, 3))
    try:
        reference.load_weights(str(weights_path))
    except (ValueError, OSError, KeyError) as error:
        raise WeightsError(
            f"{weights_path}: cannot be loaded as the no-top {spec.name} weights "
            f"keras.applications writes ({error}); give the published file "
            f"(`actrec pretrained list` shows its name)"
        ) from None
    copy_backbone_weights(reference, backbone)


def cross_modality_initialise(rgb_backbone: keras.Model, flow_backbone: keras.Model) -> None:
    """Initialises `flow_backbone` (input [H, W, 2L]) from `rgb_backbone` ([H, W, 3]): the
    first convolution's kernel averaged over RGB and replicated 2L times, every other
    weight copied."""
    copy_backbone_weights(rgb_backbone, flow_backbone)
