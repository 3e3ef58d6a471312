"""A segment model that also returns one inner layer's output of its backbone (FitNets'
hint layer, actrec.train.distillation.loss), sharing every layer and weight with the model.

keras gives a nested model's inner tensors only in that model's own graph, so the segment
model's chain (preprocessing, merge, backbone, dropout, classifier, consensus: see
actrec.models.segment_model) is called again around a two-output copy of its backbone.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import keras

from actrec.backbones.build import build_backbone
from actrec.backbones.registry import backbone_spec
from actrec.errors import ConfigError
from actrec.models.segment_model import segment_backbone


def map_layer_names(network: keras.Model) -> list[str]:
    """The names of `network`'s layers whose output is a feature map [N, h, w, c] (the
    layers `with_backbone_map` can tap in a segment model's backbone)."""
    return [layer.name for layer in network.layers if len(layer.output.shape) == 4]


@functools.cache
def registered_map_layer_names(backbone: str) -> tuple[str, ...]:
    """`map_layer_names` of the registered backbone `backbone`, built once at random at 64
    px (the names do not depend on the input)."""
    return tuple(map_layer_names(build_backbone(backbone_spec(backbone), (64, 64, 3))))


def hint_layer_problem(layer_name: str, student: str, teacher: str) -> str | None:
    """Why `layer_name` cannot be matched between a `student` and a `teacher` backbone (both
    registered names), None when it can."""
    for side, backbone in (("student", student), ("teacher", teacher)):
        names = registered_map_layer_names(backbone)
        if layer_name not in names:
            return _unknown_layer(layer_name, names, f"the {side}'s {backbone} backbone")
    return None


def _unknown_layer(layer_name: str, names: Sequence[str], where: str) -> str:
    """The message for a hint layer `where` lacks, with examples of its `names`."""
    examples = ", ".join(name for name in names if name.endswith(("_add", "_out")))
    return (
        f"train.distill_layer={layer_name!r} is not a feature-map layer of {where}; name "
        f"a layer both backbones have, e.g. {examples or ', '.join(names[-5:])}"
    )


def with_backbone_map(model: keras.Model, layer_name: str) -> keras.Model:
    """Returns frames [B, T, H, W, C] -> [logits [B, K], the map of the backbone layer
    `layer_name` [B*T, h, w, c]] over `model`'s layers (a model from build_segment_model)."""
    if len(model.inputs) != 1:
        raise ConfigError(f"model {model.name!r} is not a segment model (one frames input)")
    backbone = segment_backbone(model)
    names = map_layer_names(backbone)
    if layer_name not in names:
        raise ConfigError(_unknown_layer(layer_name, names, f"the {backbone.name} backbone"))
    tapped = keras.Model(
        backbone.inputs,
        [backbone.output, _output_in_graph(backbone, layer_name)],
        name=f"{backbone.name}_tapped",
    )
    outputs = model.inputs[0]
    feature_map = None
    for layer in model.layers:
        if isinstance(layer, keras.layers.InputLayer):
            continue
        if layer is backbone:
            outputs, feature_map = tapped(outputs)
        else:
            outputs = layer(outputs)
    return keras.Model(model.inputs, [outputs, feature_map], name=f"{model.name}_tapped")


def _output_in_graph(network: keras.Model, layer_name: str):
    """The output of `network`'s layer `layer_name` in `network`'s own graph. A rebuilt
    backbone (a temporal shift inserted, a flow stream's first convolution) holds layers
    first called in another graph, where `layer.output` (their first call's) lies."""
    layer = network.get_layer(layer_name)
    for nodes in network._nodes_by_depth.values():  # keras keeps no public node list
        for node in nodes:
            if node.operation is layer:
                return node.output_tensors[0]
    raise ConfigError(f"layer {layer_name!r} is not called in {network.name!r}'s graph")
