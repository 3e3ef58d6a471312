"""`validate_recipe`: the values of a recipe and their combinations, checked.

Every error is a ConfigError naming `section.key`, the value and what is allowed. Choices
are checked against the tuples of actrec.config.choices; the train section's checks are in
actrec.config.validate_train.
"""

from __future__ import annotations

from actrec.config.checks import invalid, require_at_least, require_choice
from actrec.config.choices import (
    ARCHITECTURES,
    BACKBONE_NAMES,
    COMMUNICATIONS,
    MODALITIES,
    SAMPLINGS,
    SHIFT_PLACEMENTS,
    SHIFTABLE_BACKBONES,
    STRATEGIES,
)
from actrec.config.coerce import coerced_field, field_types, type_name
from actrec.config.recipe import (
    MAX_VALIDATION_HOLDOUT,
    SECTION_TYPES,
    TEST_SPLIT,
    TEXT_KEYS,
    VALIDATION_SPLIT_AUTO,
    DataConfig,
    ModelConfig,
    Recipe,
    RuntimeConfig,
    resolved_partial_bn,
)
from actrec.config.validate_train import validate_train
from actrec.errors import ConfigError


def _require_types(recipe: Recipe) -> None:
    """ConfigError when a field holds a value of the wrong type (recipes built in code)."""
    for key in TEXT_KEYS:
        if not isinstance(getattr(recipe, key), str):
            raise ConfigError(f"{key}={getattr(recipe, key)!r} must be a string")
    for section, section_type in SECTION_TYPES.items():
        config = getattr(recipe, section)
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


def _validate_data(data: DataConfig) -> None:
    require_choice("data", data, "modality", MODALITIES)
    require_choice("data", data, "sampling", SAMPLINGS)
    for key in ("num_segments", "new_length", "crop_size", "frame_interval", "shuffle_buffer"):
        require_at_least("data", data, key, 1)
    if not data.scales or not all(0 < scale <= 1 for scale in data.scales):
        raise invalid(
            "data",
            "scales",
            list(data.scales),
            "give one or more fractions of the short side in (0, 1], e.g. [1.0, 0.875]",
        )
    if data.modality == "rgb" and data.new_length != 1:
        raise invalid(
            "data",
            "new_length",
            data.new_length,
            "RGB clips take one frame per segment: use 1 (stacking applies to flow, e.g. 5)",
        )
    if data.scale_size is not None and data.scale_size < data.crop_size:
        raise invalid(
            "data",
            "scale_size",
            data.scale_size,
            f"use a value >= data.crop_size={data.crop_size}, or null for crop_size * 256 / 224",
        )
    for key in ("train_split", "validation_split"):
        if not getattr(data, key).strip():
            raise invalid("data", key, getattr(data, key), "name a prepared split")
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
    if not 0 <= data.validation_holdout <= MAX_VALIDATION_HOLDOUT:
        raise invalid(
            "data",
            "validation_holdout",
            data.validation_holdout,
            f"use a fraction of the train split in [0, {MAX_VALIDATION_HOLDOUT}] (e.g. 0.1), "
            "or 0 for none",
        )
    if data.validation_holdout and data.validation_split != VALIDATION_SPLIT_AUTO:
        raise invalid(
            "data",
            "validation_split",
            data.validation_split,
            f"data.validation_holdout={data.validation_holdout} validates on the held-out "
            "videos: use validation_split auto, or validation_holdout 0",
        )


def _validate_model(model: ModelConfig, data: DataConfig) -> None:
    require_choice("model", model, "architecture", ARCHITECTURES)
    require_choice("model", model, "backbone", BACKBONE_NAMES)
    if model.architecture == "tsm" and model.backbone not in SHIFTABLE_BACKBONES:
        raise invalid(
            "model",
            "backbone",
            model.backbone,
            f"TSM inserts temporal shifts into residual blocks of: "
            f"{', '.join(SHIFTABLE_BACKBONES)}; "
            "choose one of them or model.architecture=tsn",
        )
    if not model.weights.strip():
        raise invalid(
            "model", "weights", model.weights, "use imagenet, none or the path of a weight file"
        )
    if not 0 <= model.dropout < 1:
        raise invalid("model", "dropout", model.dropout, "use a rate in [0, 1)")
    if not 0 < model.shift_fraction <= 0.5:
        raise invalid(
            "model",
            "shift_fraction",
            model.shift_fraction,
            "use a fraction in (0, 0.5] (TSM: 0.125)",
        )
    require_choice("model", model, "shift_placement", SHIFT_PLACEMENTS)
    if model.input_size is not None and model.input_size != data.crop_size:
        raise invalid(
            "model",
            "input_size",
            model.input_size,
            f"the model's input is the crop: use null or data.crop_size={data.crop_size}",
        )
    if model.batch_norm_momentum is not None and not 0 <= model.batch_norm_momentum < 1:
        raise invalid(
            "model",
            "batch_norm_momentum",
            model.batch_norm_momentum,
            "use a momentum in [0, 1) (e.g. 0.9), or null for the backbone's own",
        )
    if resolved_partial_bn(model) and model.weights == "none":
        raise invalid(
            "model",
            "partial_bn",
            model.partial_bn,
            "partial BN freezes BatchNorm statistics, which without pretrained weights "
            "(model.weights=none) would stay at their initial values; set model.partial_bn=false",
        )


def _validate_runtime(runtime: RuntimeConfig) -> None:
    require_at_least("runtime", runtime, "seed", 0)
    require_choice("runtime", runtime, "strategy", STRATEGIES)
    require_choice("runtime", runtime, "communication", COMMUNICATIONS)
    for key in ("checkpoint_every_steps", "validate_every_epochs"):
        require_at_least("runtime", runtime, key, 0)
    for key in ("keep_checkpoints", "log_every_steps"):
        require_at_least("runtime", runtime, key, 1)
    require_at_least("runtime", runtime, "steps_per_epoch", 1, optional=True)


def validate_recipe(recipe: Recipe) -> None:
    """ConfigError naming `section.key`, the value and what is allowed, for the first
    invalid value or combination; None when the recipe is usable."""
    _require_types(recipe)
    if not recipe.name.strip():
        raise ConfigError("name='' is not valid; give the recipe a name")
    _validate_data(recipe.data)
    _validate_model(recipe.model, recipe.data)
    validate_train(recipe.train)
    _validate_runtime(recipe.runtime)
