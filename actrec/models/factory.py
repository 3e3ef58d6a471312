"""The recipe's network: a segment model or a clip network built from the recipe's `model`
and `data` sections.

Training, the batch probe and evaluation / export of a finished run all build the model
here, so they build the same network from the same recipe. A segment model ("tsn", "tsm")
is passed the model section whole: its keys are `build_segment_model`'s keyword names (a
new model option is a field of actrec.config.ModelConfig and an argument there). A clip
network (model.architecture a clip family of the registry: "videomae") is built by its
family's build.py `clip_builder` (actrec.backbones.spec.ClipNetworkSpec's contract), so a
new clip family needs nothing here.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import TYPE_CHECKING

from actrec.backbones.registry import clip_family, clip_network
from actrec.config.choices import weights_source
from actrec.config.network_settings import network_with_settings
from actrec.config.recipe import DataConfig, ModelConfig, resolved_input_size
from actrec.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Callable

    import keras


def build_model(model: ModelConfig, data: DataConfig, num_classes: int) -> keras.Model:
    """The keras.Model of `model` for clips shaped by `data`: frames [B, T, H, W, C] in the
    stored 0-255 scale -> logits [B, num_classes]. model.weights "none" starts from random
    weights; so does "run:PATH", whose weights the trainer loads once the model is built
    (actrec.train.start.starting_point)."""
    if clip_family(model.architecture) is not None:
        return build_clip_network(model, data, num_classes)
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


def build_clip_network(model: ModelConfig, data: DataConfig, num_classes: int) -> keras.Model:
    """A clip network of the registry: frames [B, data.num_segments, S, S, 3] in [0, 255]
    -> logits [B, num_classes], S = the resolved input size; normalised inside by
    model.preprocessing (None: the network's own)."""
    # Keras: as above; the family's build.py imports it too.
    from actrec.models.preprocessing import FramePreprocessing

    family = clip_family(model.architecture)
    spec = network_with_settings(clip_network(model.architecture, model.backbone), model.network)
    side = resolved_input_size(model, data)
    problem = spec.input_problem(data.num_segments, side, side)
    if problem:  # e.g. an evaluation protocol's segment count
        raise ConfigError(f"{problem}: choose another number of segments or crop size")
    builder = getattr(
        importlib.import_module(f"actrec.backbones.{family.name}.build"), family.clip_builder
    )
    preprocessing = FramePreprocessing(
        model.preprocessing or spec.preprocessing, data.modality, name="preprocessing"
    )
    network = builder(
        spec,
        num_classes,
        num_frames=data.num_segments,
        input_size=side,
        dropout=model.dropout,
        drop_path_rate=model.drop_path_rate,
        remat=model.remat,
        preprocessing=preprocessing,
        seed=None,
        name=f"{model.architecture}_{model.backbone}_{data.modality}",
    )
    if model.batch_norm_momentum is not None:
        # A MoViNet's BatchNorms sit inside its convolution layers: the recipe's momentum
        # reaches them too (when it did not, a synthetic-set A0 stream trained with the
        # Model Garden's 0.99 scored 16 % on its test split, 68 % with the recipe's 0.9).
        for layer in nested_batch_normalization_layers(network):
            layer.momentum = model.batch_norm_momentum
    return network


def nested_batch_normalization_layers(
    network: keras.Model,
) -> list[keras.layers.BatchNormalization]:
    """Every BatchNormalization of `network`, inside its layers too."""
    import keras  # as build_model's imports

    # Keras 3 has no public accessor for a custom layer's own layers: its tracker's walk.
    return [
        layer
        for layer in network._flatten_layers(include_self=False, recursive=True)
        if isinstance(layer, keras.layers.BatchNormalization)
    ]


def model_builder(
    model: ModelConfig, data: DataConfig, num_classes: int
) -> Callable[[], keras.Model]:
    """A function of no arguments that builds `build_model(model, data, num_classes)` (a
    distribution strategy calls it inside its scope)."""

    def build() -> keras.Model:
        return build_model(model, data, num_classes)

    return build
