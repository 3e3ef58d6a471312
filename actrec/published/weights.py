"""A published network's PyTorch tensors set into the Keras segment model actrec builds for it.

Every module of the published network is one Keras layer (actrec.backbones.published_layout);
its tensors become the layer's weights in Keras's layout:

    Conv2D            weight [O, I, kh, kw]          -> kernel [kh, kw, I, O]
    DepthwiseConv2D   weight [C, 1, kh, kw]          -> kernel [kh, kw, C, 1]
    BatchNorm         weight, bias, running_mean, running_var -> gamma, beta, moving mean, variance
    Dense             weight [K, F], bias [K]        -> kernel [F, K], bias [K]

A module without a layer, or a layer without a module, is an error that names them (in
actrec's spelling of the PyTorch modules) with their counts: the file is another
architecture than the one the model was built for.
"""

from __future__ import annotations

import keras
import numpy as np

from actrec.backbones.published_layout import CLASSIFIER_MODULE, keras_layer_name
from actrec.errors import WeightsError
from actrec.models.segment_model import segment_backbone
from actrec.published.layouts import PublishedNetwork

SHOWN_NAMES = 6


def _absent_parameters(layer, parameters: dict[str, np.ndarray]) -> list[str]:
    """The PyTorch tensors Keras `layer` needs that `parameters` lacks."""
    if isinstance(layer, keras.layers.BatchNormalization):
        needed = ("weight", "bias", "running_mean", "running_var")
    elif isinstance(layer, keras.layers.Dense):
        needed = ("weight", "bias")
    else:
        needed = ("weight",)
    return [name for name in needed if name not in parameters]


def _layer_values(layer, parameters: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The weights of Keras `layer` from one PyTorch module's `parameters`."""
    if isinstance(layer, keras.layers.BatchNormalization):
        names = ("weight", "bias", "running_mean", "running_var")
        return [parameters[name] for name in names]
    if isinstance(layer, keras.layers.DepthwiseConv2D):
        return [parameters["weight"].transpose(2, 3, 0, 1)]  # [C,1,kh,kw] -> [kh,kw,C,1]
    if isinstance(layer, keras.layers.Conv2D):
        return [parameters["weight"].transpose(2, 3, 1, 0)]  # [O,I,kh,kw] -> [kh,kw,I,O]
    if isinstance(layer, keras.layers.Dense):
        return [parameters["weight"].T, parameters["bias"]]  # [K, F] -> [F, K]
    raise WeightsError(f"layer {layer.name!r} ({type(layer).__name__}) has no PyTorch mapping")


def _names(names: list[str]) -> str:
    shown = ", ".join(sorted(names)[:SHOWN_NAMES])
    return shown + (", ..." if len(names) > SHOWN_NAMES else "")


def _backbone_layers(backbone: keras.Model) -> dict[str, keras.layers.Layer]:
    return {layer.name: layer for layer in backbone.layers if layer.weights}


def set_published_weights(model: keras.Model, network: PublishedNetwork, source: str) -> None:
    """Sets every weight of `model` (a segment model of `network`'s backbone and classes)
    from `network`; WeightsError naming the missing and unexpected modules, with counts,
    or a tensor whose shape does not fit. `source` names the file in messages."""
    targets = _backbone_layers(segment_backbone(model))
    targets[CLASSIFIER_MODULE] = model.get_layer(CLASSIFIER_MODULE)
    _set_layers(targets, network, source)


def set_published_backbone_weights(
    backbone: keras.Model, network: PublishedNetwork, source: str
) -> None:
    """Sets every weight of `backbone` (actrec.backbones.build's network of `network`'s
    backbone, no classifier) from `network`, whose classifier is left out (an ImageNet
    file installed as a backbone's start)."""
    _set_layers(_backbone_layers(backbone), network, source, ignored=(CLASSIFIER_MODULE,))


def _set_layers(
    targets: dict[str, keras.layers.Layer],
    network: PublishedNetwork,
    source: str,
    ignored: tuple[str, ...] = (),
) -> None:
    assigned: dict[str, str] = {}
    unexpected = []
    for module in network.modules:
        if module in ignored:
            continue
        name = keras_layer_name(network.family, module)
        if name is None or name not in targets:
            unexpected.append(module)
        else:
            assigned[name] = module
    missing = [name for name in targets if name not in assigned]
    incomplete = [
        f"{module} without {', '.join(absent)}"
        for name, module in assigned.items()
        if (absent := _absent_parameters(targets[name], network.modules[module]))
    ]
    if missing or unexpected or incomplete:
        raise WeightsError(
            f"{source}: its state dict does not fit a {network.backbone} "
            f"({network.layout} layout): {len(missing)} layers have no tensors "
            f"({_names(missing)}), {len(unexpected)} modules have no layer "
            f"({_names(unexpected)}) and {len(incomplete)} modules lack tensors "
            f"({_names(incomplete)}); is it another architecture (a non-local TSM, another "
            "backbone)? Check --backbone, or docs/model-zoo.md for the files actrec converts"
        )
    for name, module in assigned.items():
        layer = targets[name]
        values = _layer_values(layer, network.modules[module])
        expected = [tuple(weight.shape) for weight in layer.weights]
        if [value.shape for value in values] != expected:
            raise WeightsError(
                f"{source}: module {module} has tensors of shapes "
                f"{[value.shape for value in values]} where {network.backbone}'s layer "
                f"{name} needs {expected}; is it another architecture or input size?"
            )
        layer.set_weights([value.astype(np.float32) for value in values])
