"""The recipe's network: a segment model built from the recipe's `model` and `data` sections.

Training, the batch probe and evaluation / export of a finished run all build the model
here, so they build the same network from the same recipe. The model section is passed
whole: its keys are `build_segment_model`'s keyword names (a new model option is a field of
actrec.config.ModelConfig and an argument there, nothing here).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from actrec.config.choices import weights_source
from actrec.config.recipe import DataConfig, ModelConfig, resolved_input_size

if TYPE_CHECKING:
    from collections.abc import Callable

    import keras


def build_model(model: ModelConfig, data: DataConfig, num_classes: int) -> keras.Model:
    """The keras.Model of `model` for clips shaped by `data`: frames [B, T, H, W, C] in the
    stored 0-255 scale -> logits [B, num_classes]. model.weights "none" starts from random
    weights; so does "run:PATH", whose weights the trainer loads once the model is built
    (actrec.train.start.starting_point)."""
    # Keras: the export formats, and so the CLI, import this module before TensorFlow.
    from actrec.models.segment_model import build_segment_model

    options = dataclasses.asdict(model)
    options["input_size"] = resolved_input_size(model, data)
    if weights_source(model.weights).is_run:
        options["weights"] = "none"
    return build_segment_model(
        num_classes=num_classes,
        modality=data.modality,
        num_segments=data.num_segments,
        new_length=data.new_length,
        **options,
    )


def model_builder(
    model: ModelConfig, data: DataConfig, num_classes: int
) -> Callable[[], keras.Model]:
    """A function of no arguments that builds `build_model(model, data, num_classes)` (a
    distribution strategy calls it inside its scope)."""

    def build() -> keras.Model:
        return build_model(model, data, num_classes)

    return build
