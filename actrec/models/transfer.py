"""Starting a segment model from another trained segment model, or a clip network from
another of the same size (fine-tuning).

Every backbone weight is copied, layer by layer in order (actrec.models.initialisation):
TSN and TSM backbones have the same weights (TemporalShift has none), and an RGB first
convolution becomes a flow one by TSN's cross-modality initialisation (the kernel averaged
over RGB and replicated to the 2L flow channels). BatchNorm statistics come with their layers.

A clip network (VideoMAE: no nested backbone) carries every layer with weights but its
classifier, in layer order; its weights do not depend on the frame count or the frame size
(the position table is recomputed), so a start with other frames or another crop keeps them.

The classifier is kept when the target's classes are the source's (in any order: its rows
follow the names), and stays the new, randomly initialised one otherwise, as TSM's
`--tune_from` does for a dataset with other classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import keras

from actrec.errors import WeightsError
from actrec.models.initialisation import copy_layer_weights, layers_with_weights

CLASSIFIER_LAYER = "classifier"


@dataclass(frozen=True)
class TransferReport:
    """What `transfer_weights` did.

    backbone_tensors: backbone weight tensors copied (BatchNorm statistics included).
    cross_modality: names of the weights mapped RGB -> flow (the first convolution's kernel).
    classifier: "kept", "kept, reordered" (the same classes in another order) or "new".
    """

    backbone_tensors: int
    cross_modality: tuple[str, ...]
    classifier: str

    def lines(self) -> list[str]:
        """What was loaded and what was made new, one line each, for the user."""
        loaded = f"loaded {self.backbone_tensors} backbone weight tensors"
        if self.cross_modality:
            loaded += (
                f" ({', '.join(self.cross_modality)} mapped RGB -> flow by cross-modality "
                "initialisation)"
            )
        classifier = {
            "kept": "classifier kept (the same classes)",
            "kept, reordered": "classifier kept (the same classes, rows reordered by name)",
            "new": "classifier new (other classes): randomly initialised",
        }[self.classifier]
        return [loaded, classifier]


def classifier_mapping(
    source_classes: Sequence[str], target_classes: Sequence[str]
) -> list[int] | None:
    """The source row of each target class when both hold the same class names (any order),
    else None (a new classifier)."""
    if len(source_classes) != len(target_classes) or set(source_classes) != set(target_classes):
        return None
    row = {name: index for index, name in enumerate(source_classes)}
    return [row[name] for name in target_classes]


def _mapped_weight_names(source_layers: list, target_layers: list) -> tuple[str, ...]:
    """The target weights whose shape differs from the source's (cross-modality maps)."""
    names = []
    pairs = zip(source_layers, target_layers, strict=False)
    for source_layer, target_layer in pairs:
        for source_weight, target_weight in zip(
            source_layer.weights, target_layer.weights, strict=False
        ):
            if tuple(source_weight.shape) != tuple(target_weight.shape):
                names.append(f"{target_layer.name}/{target_weight.name}")
    return tuple(names)


def _carried_layers(model: keras.Model) -> tuple[keras.Model, list]:
    """(the network a start carries, its layers with weights in order): a segment model's
    nested backbone, or a clip network itself without its classifier."""
    for layer in model.layers:
        if isinstance(layer, keras.Model):  # a segment model's backbone
            return layer, layers_with_weights(layer)
    carried = [layer for layer in layers_with_weights(model) if layer.name != CLASSIFIER_LAYER]
    return model, carried


def transfer_weights(
    source: keras.Model,
    target: keras.Model,
    source_classes: Sequence[str],
    target_classes: Sequence[str],
) -> TransferReport:
    """Copies `source`'s backbone into `target` (both from build_segment_model, the same
    backbone and input size; any architecture, segments and modality RGB -> RGB, RGB -> flow
    or flow -> flow; or two clip networks of one size, any frames) and its classifier when
    the classes are the same; returns what it did.
    """
    (source_network, source_layers), (target_network, target_layers) = (
        _carried_layers(source),
        _carried_layers(target),
    )
    mapped = _mapped_weight_names(source_layers, target_layers)
    copy_layer_weights(source_network, target_network, source_layers, target_layers)
    tensors = sum(len(layer.weights) for layer in target_layers)
    mapping = classifier_mapping(source_classes, target_classes)
    classifier = "new"
    if mapping is not None:
        kernel, bias = source.get_layer(CLASSIFIER_LAYER).get_weights()  # [F, K], [K]
        target_layer = target.get_layer(CLASSIFIER_LAYER)
        if tuple(target_layer.kernel.shape) != kernel.shape:
            raise WeightsError(
                f"cannot keep the classifier of {source.name!r} ({kernel.shape}) in "
                f"{target.name!r} ({tuple(target_layer.kernel.shape)}): the features differ"
            )
        target_layer.set_weights([kernel[:, mapping], bias[mapping]])
        classifier = "kept" if mapping == sorted(mapping) else "kept, reordered"
    return TransferReport(int(tensors), mapped, classifier)
