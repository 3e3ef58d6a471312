"""The recipe's network: a segment model built from the recipe's `model` and `data` sections.

Training, the batch probe and evaluation / export of a finished run all build the model
here, so they build the same network from the same recipe.
"""

from __future__ import annotations


def build_model(model, data, num_classes: int):
    """The keras.Model of `model` (actrec.config.ModelConfig) for clips shaped by `data`
    (actrec.config.DataConfig): frames [B, T, H, W, C] in the stored 0-255 scale -> logits
    [B, num_classes]. model.weights "none" starts from random weights."""
    from actrec.models.segment_model import batch_normalization_layers, build_segment_model

    network = build_segment_model(
        model.backbone,
        num_classes,
        architecture=model.architecture,
        modality=data.modality,
        num_segments=data.num_segments,
        new_length=data.new_length,
        input_size=model.input_size or data.crop_size,
        dropout=model.dropout,
        partial_bn=model.partial_bn,
        shift_fraction=model.shift_fraction,
        shift_placement=model.shift_placement,
        weights=None if model.weights == "none" else model.weights,
        remat=model.remat,
    )
    if model.batch_norm_momentum is not None:
        for layer in batch_normalization_layers(network):
            layer.momentum = model.batch_norm_momentum
    return network


def model_builder(model, data, num_classes: int):
    """A function of no arguments that builds `build_model(model, data, num_classes)` (a
    distribution strategy calls it inside its scope)."""

    def build():
        return build_model(model, data, num_classes)

    return build
