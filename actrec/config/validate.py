"""`validate_recipe`: the values of a recipe and their combinations, checked.

Every error is a ConfigError naming `section.key`, the value and what is allowed. Choices
are checked against the `Literal` aliases of actrec.config.recipe (their tuples).
"""

from __future__ import annotations

import itertools
from typing import Any

from actrec.config.coerce import coerced_field, field_types, type_name
from actrec.config.recipe import (
    ADAM_STATES,
    ARCHITECTURES,
    AUTO,
    BACKBONE_NAMES,
    COMMUNICATIONS,
    DECAYS,
    LR_COUPLINGS,
    LR_MULT_KEYS,
    MAX_VALIDATION_HOLDOUT,
    MIXED_PRECISIONS,
    MODALITIES,
    OPTIMIZERS,
    SAMPLINGS,
    SECTION_TYPES,
    SHIFT_PLACEMENTS,
    SHIFTABLE_BACKBONES,
    STRATEGIES,
    SYNCS,
    TEST_SPLIT,
    TEXT_KEYS,
    VALIDATION_SPLIT_AUTO,
    WEIGHT_DECAY_MODES,
    DataConfig,
    ModelConfig,
    Recipe,
    RuntimeConfig,
    TrainConfig,
    resolved_partial_bn,
)
from actrec.errors import ConfigError


def _invalid(section: str, key: str, value: Any, allowed: str) -> ConfigError:
    return ConfigError(f"{section}.{key}={value!r} is not valid; {allowed}")


def _require_choice(section: str, config: Any, key: str, choices: tuple[str, ...]) -> None:
    value = getattr(config, key)
    if value not in choices:
        raise _invalid(section, key, value, f"choose one of: {', '.join(choices)}")


def _require_at_least(section: str, config: Any, key: str, minimum: float, optional=False):
    value = getattr(config, key)
    if optional and value is None:
        return
    if value is None or value < minimum:
        allowed = f"use a value >= {minimum}" + (" or null" if optional else "")
        raise _invalid(section, key, value, allowed)


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
    _require_choice("data", data, "modality", MODALITIES)
    _require_choice("data", data, "sampling", SAMPLINGS)
    for key in ("num_segments", "new_length", "crop_size", "frame_interval", "shuffle_buffer"):
        _require_at_least("data", data, key, 1)
    if not data.scales or not all(0 < scale <= 1 for scale in data.scales):
        raise _invalid(
            "data",
            "scales",
            list(data.scales),
            "give one or more fractions of the short side in (0, 1], e.g. [1.0, 0.875]",
        )
    if data.modality == "rgb" and data.new_length != 1:
        raise _invalid(
            "data",
            "new_length",
            data.new_length,
            "RGB clips take one frame per segment: use 1 (stacking applies to flow, e.g. 5)",
        )
    if data.scale_size is not None and data.scale_size < data.crop_size:
        raise _invalid(
            "data",
            "scale_size",
            data.scale_size,
            f"use a value >= data.crop_size={data.crop_size}, or null for crop_size * 256 / 224",
        )
    for key in ("train_split", "validation_split"):
        if not getattr(data, key).strip():
            raise _invalid("data", key, getattr(data, key), "name a prepared split")
    if data.validation_split == data.train_split:
        raise _invalid(
            "data",
            "validation_split",
            data.validation_split,
            "it is also data.train_split; use 'auto', 'none' or another split",
        )
    _validate_validation_choice(data)


def _validate_validation_choice(data: DataConfig) -> None:
    if data.validation_split == TEST_SPLIT:
        raise _invalid(
            "data",
            "validation_split",
            TEST_SPLIT,
            "the test split is kept for `actrec eval` (choosing epochs or weights on it makes "
            "the test accuracy optimistic); use auto (the data's val split, or a held-out part "
            "of train with data.validation_holdout=0.1) or none",
        )
    if not 0 <= data.validation_holdout <= MAX_VALIDATION_HOLDOUT:
        raise _invalid(
            "data",
            "validation_holdout",
            data.validation_holdout,
            f"use a fraction of the train split in [0, {MAX_VALIDATION_HOLDOUT}] (e.g. 0.1), "
            "or 0 for none",
        )
    if data.validation_holdout and data.validation_split != VALIDATION_SPLIT_AUTO:
        raise _invalid(
            "data",
            "validation_split",
            data.validation_split,
            f"data.validation_holdout={data.validation_holdout} validates on the held-out "
            "videos: use validation_split auto, or validation_holdout 0",
        )


def _validate_model(model: ModelConfig, data: DataConfig) -> None:
    _require_choice("model", model, "architecture", ARCHITECTURES)
    _require_choice("model", model, "backbone", BACKBONE_NAMES)
    if model.architecture == "tsm" and model.backbone not in SHIFTABLE_BACKBONES:
        raise _invalid(
            "model",
            "backbone",
            model.backbone,
            f"TSM inserts temporal shifts into residual blocks of: "
            f"{', '.join(SHIFTABLE_BACKBONES)}; "
            "choose one of them or model.architecture=tsn",
        )
    if not model.weights.strip():
        raise _invalid(
            "model", "weights", model.weights, "use imagenet, none or the path of a weight file"
        )
    if not 0 <= model.dropout < 1:
        raise _invalid("model", "dropout", model.dropout, "use a rate in [0, 1)")
    if not 0 < model.shift_fraction <= 0.5:
        raise _invalid(
            "model",
            "shift_fraction",
            model.shift_fraction,
            "use a fraction in (0, 0.5] (TSM: 0.125)",
        )
    _require_choice("model", model, "shift_placement", SHIFT_PLACEMENTS)
    if model.input_size is not None and model.input_size != data.crop_size:
        raise _invalid(
            "model",
            "input_size",
            model.input_size,
            f"the model's input is the crop: use null or data.crop_size={data.crop_size}",
        )
    if model.batch_norm_momentum is not None and not 0 <= model.batch_norm_momentum < 1:
        raise _invalid(
            "model",
            "batch_norm_momentum",
            model.batch_norm_momentum,
            "use a momentum in [0, 1) (e.g. 0.9), or null for the backbone's own",
        )
    if resolved_partial_bn(model) and model.weights == "none":
        raise _invalid(
            "model",
            "partial_bn",
            model.partial_bn,
            "partial BN freezes BatchNorm statistics, which without pretrained weights "
            "(model.weights=none) would stay at their initial values; set model.partial_bn=false",
        )


def _validate_train(train: TrainConfig) -> None:
    for key in ("epochs", "kavg_steps", "accumulation_steps"):
        _require_at_least("train", train, key, 1)
    auto_batch = train.batch_size == AUTO
    if not auto_batch:
        _require_at_least("train", train, "batch_size", 1)
    elif train.lr_coupling != "constant" and train.lr_reference_batch is None:
        raise _invalid(
            "train",
            "batch_size",
            AUTO,
            f"with train.lr_coupling={train.lr_coupling} the learning rate follows the batch "
            "that auto chooses, relative to train.lr_reference_batch: set it to the global "
            f"batch train.lr={train.lr:g} was tuned for (`actrec train --batch-size auto` "
            "sets it to the recipe's batch size), or use train.lr_coupling=constant",
        )
    _require_at_least("train", train, "batch_growth", 1.0)
    _require_at_least("train", train, "batch_growth_every", 0)
    if train.batch_growth > 1 and train.batch_growth_every == 0:
        raise _invalid(
            "train",
            "batch_growth_every",
            0,
            f"train.batch_growth={train.batch_growth} needs the epochs between growths "
            "(e.g. 10), or set train.batch_growth=1 for a constant batch",
        )
    if (
        train.max_batch_size is not None
        and not auto_batch
        and train.max_batch_size < train.batch_size
    ):
        raise _invalid(
            "train",
            "max_batch_size",
            train.max_batch_size,
            f"use a value >= train.batch_size={train.batch_size}, or null for no cap",
        )
    if not train.lr > 0:
        raise _invalid("train", "lr", train.lr, "use a learning rate > 0")
    _require_at_least("train", train, "lr_reference_batch", 1, optional=True)
    _require_choice("train", train, "lr_coupling", LR_COUPLINGS)
    if not 0 <= train.warmup_epochs < train.epochs:
        raise _invalid(
            "train",
            "warmup_epochs",
            train.warmup_epochs,
            f"use a value in [0, train.epochs={train.epochs})",
        )
    _require_choice("train", train, "decay", DECAYS)
    epochs = train.decay_epochs
    if any(epoch < 1 for epoch in epochs) or any(b <= a for a, b in itertools.pairwise(epochs)):
        raise _invalid(
            "train",
            "decay_epochs",
            list(epochs),
            "use strictly increasing epochs >= 1, e.g. [30, 60] (or [] for no step)",
        )
    if not 0 < train.decay_factor <= 1:
        raise _invalid("train", "decay_factor", train.decay_factor, "use a factor in (0, 1]")
    _require_choice("train", train, "optimizer", OPTIMIZERS)
    if not 0 <= train.momentum < 1:
        raise _invalid("train", "momentum", train.momentum, "use a value in [0, 1)")
    if train.nesterov and (train.optimizer != "sgd" or train.momentum == 0):
        raise _invalid(
            "train", "nesterov", True, "Nesterov momentum needs optimizer sgd and momentum > 0"
        )
    _require_at_least("train", train, "weight_decay", 0.0)
    _require_choice("train", train, "weight_decay_mode", WEIGHT_DECAY_MODES)
    for key in LR_MULT_KEYS:
        if not getattr(train, key) > 0:
            raise _invalid("train", key, getattr(train, key), "use a multiplier > 0 (1 for none)")
    if train.clip_norm is not None and not train.clip_norm > 0:
        raise _invalid("train", "clip_norm", train.clip_norm, "use a norm > 0, or null for none")
    if not 0 <= train.label_smoothing < 1:
        raise _invalid("train", "label_smoothing", train.label_smoothing, "use a value in [0, 1)")
    _require_choice("train", train, "sync", SYNCS)
    _require_choice("train", train, "adam_state", ADAM_STATES)
    _require_choice("train", train, "mixed_precision", MIXED_PRECISIONS)
    if train.max_per_replica_batch != AUTO:
        _require_at_least("train", train, "max_per_replica_batch", 1, optional=True)
    _validate_divergence(train)


def _validate_divergence(train: TrainConfig) -> None:
    if train.loss_upper_bound is not None and not train.loss_upper_bound > 0:
        raise _invalid(
            "train", "loss_upper_bound", train.loss_upper_bound, "use a loss > 0, or null"
        )
    if train.loss_explosion_factor is not None and not train.loss_explosion_factor > 1:
        raise _invalid(
            "train",
            "loss_explosion_factor",
            train.loss_explosion_factor,
            "use a factor > 1 (e.g. 5: a loss 5x the mean of the last 5), or null",
        )
    _require_at_least("train", train, "max_recoveries", 0)
    if not 0 < train.recovery_lr_factor <= 1:
        raise _invalid(
            "train",
            "recovery_lr_factor",
            train.recovery_lr_factor,
            "use a factor in (0, 1] (1 keeps the rate, 0.5 halves it after each recovery)",
        )


def _validate_runtime(runtime: RuntimeConfig) -> None:
    _require_at_least("runtime", runtime, "seed", 0)
    _require_choice("runtime", runtime, "strategy", STRATEGIES)
    _require_choice("runtime", runtime, "communication", COMMUNICATIONS)
    for key in ("checkpoint_every_steps", "validate_every_epochs"):
        _require_at_least("runtime", runtime, key, 0)
    for key in ("keep_checkpoints", "log_every_steps"):
        _require_at_least("runtime", runtime, key, 1)
    _require_at_least("runtime", runtime, "steps_per_epoch", 1, optional=True)


def validate_recipe(recipe: Recipe) -> None:
    """ConfigError naming `section.key`, the value and what is allowed, for the first
    invalid value or combination; None when the recipe is usable."""
    _require_types(recipe)
    if not recipe.name.strip():
        raise ConfigError("name='' is not valid; give the recipe a name")
    _validate_data(recipe.data)
    _validate_model(recipe.model, recipe.data)
    _validate_train(recipe.train)
    _validate_runtime(recipe.runtime)
