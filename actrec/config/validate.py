"""`validate_recipe`: the values of a recipe and their combinations, checked.

Every error is a ConfigError naming `section.key`, the value and what is allowed. A value
alone is checked by its field (`validate_fields`: its Literal's choices, the check beside
its default in actrec.config.recipe); what is here and in actrec.config.validate_train
checks values together.
"""

from __future__ import annotations

import typing
from dataclasses import fields
from typing import Any

from actrec.backbones.registry import backbone_spec
from actrec.config.bounds import field_problem
from actrec.config.checks import invalid, require_choice
from actrec.config.choices import CLIP_ARCHITECTURES, SHIFTABLE_BACKBONES, weights_source
from actrec.config.coerce import coerced_field, field_types, is_choice, type_name
from actrec.config.recipe import (
    SECTION_TYPES,
    TEST_SPLIT,
    TEXT_KEYS,
    VALIDATION_SPLIT_AUTO,
    DataConfig,
    ModelConfig,
    Recipe,
    TrainConfig,
    resolved_partial_bn,
)
from actrec.config.validate_clip import validate_clip_model, validate_segment_model
from actrec.config.validate_train import validate_train
from actrec.errors import ConfigError


def _require_types(recipe: Recipe) -> None:
    """ConfigError when a field holds a value of the wrong type (recipes built in code)."""
    for key in TEXT_KEYS:
        if not isinstance(getattr(recipe, key), str):
            raise ConfigError(f"{key}={getattr(recipe, key)!r} must be a string")
    for section in SECTION_TYPES:
        _require_section_types(section, getattr(recipe, section))


def _require_section_types(section: str, config: Any) -> None:
    """ConfigError unless `config` is the section's dataclass with values of its types."""
    section_type = SECTION_TYPES[section]
    if not isinstance(config, section_type):
        raise ConfigError(f"recipe.{section} must be a {section_type.__name__}")
    for key, annotation in field_types(section_type).items():
        value = getattr(config, key)
        coerced = coerced_field(section, key, value, annotation, "recipe")
        if coerced != value:
            raise ConfigError(
                f"recipe: {section}.{key}={value!r} has the wrong type; expected "
                f"{type_name(annotation)}"
            )


def validate_fields(section: str, config: Any) -> None:
    """ConfigError for the first field of `config` whose value its own check refuses: a
    choice (its Literal's values) or the check beside its default (actrec.config.bounds)."""
    annotations = typing.get_type_hints(type(config))
    for item in fields(config):
        value = getattr(config, item.name)
        if is_choice(annotations[item.name]):
            require_choice(f"{section}.{item.name}", value, typing.get_args(annotations[item.name]))
        allowed = field_problem(item.metadata, value)
        if allowed is not None:
            raise invalid(
                section, item.name, list(value) if isinstance(value, tuple) else value, allowed
            )


def validate_data(data: DataConfig) -> None:
    """ConfigError for the first invalid value or combination of a data section (the
    recipe's, or the input pipeline's ClipSpec, which is one)."""
    validate_fields("data", data)
    if data.modality == "rgb" and data.new_length != 1:
        raise ConfigError(
            f"data.new_length={data.new_length} with modality 'rgb' is not valid; RGB clips "
            "take one frame per segment: use 1 (stacking applies to flow, e.g. 5)"
        )
    if data.scale_size is not None and data.scale_size < data.crop_size:
        raise invalid(
            "data",
            "scale_size",
            data.scale_size,
            f"use a value >= data.crop_size={data.crop_size}, or null for crop_size * 256 / 224",
        )
    if data.validation_split == data.train_split:
        raise invalid(
            "data",
            "validation_split",
            data.validation_split,
            "it is also data.train_split; use 'auto', 'none' or another split",
        )
    _validate_validation_choice(data)


def _validate_validation_choice(data: DataConfig) -> None:
    if data.validation_split == TEST_SPLIT:
        raise invalid(
            "data",
            "validation_split",
            TEST_SPLIT,
            "the test split is kept for `actrec eval` (choosing epochs or weights on it makes "
            "the test accuracy optimistic); use auto (the data's val split, or a held-out part "
            "of train with data.validation_holdout=0.1) or none",
        )
    if data.validation_holdout and data.validation_split != VALIDATION_SPLIT_AUTO:
        raise invalid(
            "data",
            "validation_split",
            data.validation_split,
            f"data.validation_holdout={data.validation_holdout} validates on the held-out "
            "videos: use validation_split auto, or validation_holdout 0",
        )


def _validate_model(model: ModelConfig, data: DataConfig, train: TrainConfig) -> None:
    if model.architecture in CLIP_ARCHITECTURES:
        validate_clip_model(model, data, train)
        return
    validate_segment_model(model)
    if model.architecture == "tsm" and model.backbone not in SHIFTABLE_BACKBONES:
        raise invalid(
            "model",
            "backbone",
            model.backbone,
            f"TSM inserts temporal shifts into residual blocks of: "
            f"{', '.join(SHIFTABLE_BACKBONES)}; "
            "choose one of them or model.architecture=tsn",
        )
    if model.weights == "imagenet" and backbone_spec(model.backbone).weights is None:
        raise invalid(
            "model",
            "weights",
            model.weights,
            f"{model.backbone} is a test network with no ImageNet weights: use "
            "model.weights=none, or a backbone with published weights",
        )
    if model.input_size is not None and model.input_size != data.crop_size:
        raise invalid(
            "model",
            "input_size",
            model.input_size,
            f"the model's input is the crop: use null or data.crop_size={data.crop_size}",
        )
    start = weights_source(model.weights)
    if start.is_run and not start.path:
        raise invalid(
            "model",
            "weights",
            model.weights,
            "name the run to start from: run:PATH (a finished `actrec train` --workdir or an "
            "`actrec export` folder)",
        )
    if resolved_partial_bn(model) and model.weights == "none":
        raise invalid(
            "model",
            "partial_bn",
            model.partial_bn,
            "partial BN freezes BatchNorm statistics, which without pretrained weights "
            "(model.weights=none) would stay at their initial values; set model.partial_bn=false",
        )


def validate_recipe(recipe: Recipe) -> None:
    """ConfigError naming `section.key`, the value and what is allowed, for the first
    invalid value or combination; None when the recipe is usable."""
    _require_types(recipe)
    if not recipe.name.strip():
        raise ConfigError("name='' is not valid; give the recipe a name")
    validate_data(recipe.data)
    for section in ("model", "train", "runtime"):
        validate_fields(section, getattr(recipe, section))
    _validate_model(recipe.model, recipe.data, recipe.train)
    validate_train(recipe.train)
    if recipe.train.distill_from is not None and recipe.data.modality != "rgb":
        raise invalid(
            "train",
            "distill_from",
            recipe.train.distill_from,
            f"the student learns from a flow teacher, so it must be an RGB model, and "
            f"data.modality is {recipe.data.modality!r}: distil into an RGB recipe (e.g. "
            "synthetic-tsm, finetune-tsm), or leave --distill-from out",
        )


def validate_train_section(train: TrainConfig) -> None:
    """ConfigError for the first invalid value or combination of a train section: the
    recipe's (`validate_recipe` checks it the same way) or one built in code for the
    training loop (actrec.train.loop.trainer.DistributedTrainer, which calls this)."""
    _require_section_types("train", train)
    validate_fields("train", train)
    validate_train(train)
