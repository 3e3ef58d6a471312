"""Recipes: what to train and how, as frozen dataclasses that round-trip through YAML.

    Recipe = name, description, reference
             + DataConfig    (clips: modality, segments, crop, sampling, splits)
             + ModelConfig   (architecture, backbone, ImageNet weights, dropout, TSM shift)
             + TrainConfig   (batch schedule, learning rate and its coupling, optimizer, sync)
             + RuntimeConfig (seed, distribution strategy, checkpoints, logging)

Built-in recipes (actrec/recipes/*.yaml) encode published hyperparameters; a recipe is
named by its built-in name or by the path of a YAML file with the same sections:

    name: my-recipe
    description: ...
    reference: ...
    data: {modality: rgb, num_segments: 3, ...}
    model: {...}
    train: {...}
    runtime: {...}

A section or key left out takes the dataclass default. `apply_overrides` applies
`section.key=value` settings (values parsed as YAML). Loading and overriding check keys and
types; `validate_recipe` checks values and their combinations. The order a command follows:

    recipe = apply_overrides(load_recipe(name_or_path), settings); validate_recipe(recipe)

This module imports neither TensorFlow, Keras nor OpenCV.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import math
import re
import types
import typing
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml

from actrec.errors import ConfigError

if typing.TYPE_CHECKING:
    from actrec.data.pipeline import ClipSpec

MODALITIES = ("rgb", "flow")
SAMPLINGS = ("tsn", "dense")
ARCHITECTURES = ("tsn", "tsm")
SHIFT_PLACEMENTS = ("blockres", "block")
LR_COUPLINGS = ("constant", "linear", "sqrt")
DECAYS = ("step", "cosine", "none")
OPTIMIZERS = ("sgd", "adam")
SYNCS = ("allreduce", "kavg")
ADAM_STATES = ("average", "local", "reset")
WEIGHT_DECAY_MODES = ("coupled", "decoupled")
LR_MULT_KEYS = ("bias_lr_mult", "first_conv_lr_mult", "classifier_lr_mult")
MIXED_PRECISIONS = ("none", "float16", "bfloat16")
STRATEGIES = ("auto", "one-device", "mirrored", "multi-worker")
COMMUNICATIONS = ("auto", "ring", "nccl")
NAMED_WEIGHTS = ("imagenet", "none")
VALIDATION_SPLIT_AUTO = "auto"
VALIDATION_SPLIT_NONE = "none"
TEST_SPLIT = "test"
MAX_VALIDATION_HOLDOUT = 0.5
AUTO = "auto"
"""train.batch_size / train.max_per_replica_batch: chosen by probing memory and throughput
(actrec.train.memory) when the run starts."""
SECTIONS = ("data", "model", "train", "runtime")
TEXT_KEYS = ("name", "description", "reference")
RECIPE_SUFFIXES = (".yaml", ".yml")
RECIPES_PACKAGE_FOLDER = "recipes"


@dataclass(frozen=True)
class DataConfig:
    """The clips: see actrec.data.pipeline.ClipSpec for the meaning of each field.

    modality: "rgb" or "flow".
    num_segments: T, frames (RGB) or flow stacks per clip.
    new_length: L, consecutive flow fields per segment (2 L channels); 1 for RGB, 5 in TSN.
    crop_size: side of the square crop in pixels (the model's input side).
    sampling: "tsn" (one random frame per segment) or "dense" (TSM: T frames every
        frame_interval frames).
    frame_interval: stride of dense sampling.
    scale_size: evaluation short side before the centre crop (None: crop_size * 256 / 224).
    flip: random horizontal flip in training (flow-aware).
    scales: TSN's multi-scale crop: training crops of these fractions of the short side
        (TSN: RGB 1, .875, .75, .66; flow 1, .875, .75); milder when objects are small.
    more_fix_crop: the crop is placed at one of TSN's 13 fixed positions (corners, centre,
        edge centres, quarter points) instead of 5 (corners, centre), as the sources do.
    shuffle_buffer: unused since record format 2, whose training order is a new permutation
        of all the videos every epoch (actrec.data.order); older recipes keep loading.
    train_split: the prepared split trained on.
    validation_split: what validation (and best.weights.h5) uses: "auto" = the held-out part
        of train when validation_holdout > 0, else "val" when the prepared data has it, else
        none; "none" disables validation; another value names a prepared split. Never
        "test": the test split is for `actrec eval` (choosing on it biases the test result).
    validation_holdout: fraction of the train split held out (the same share of every
        class, chosen by runtime.seed) to validate on; those videos are not trained on.
        0 = none (UCF101 / HMDB51 recipes: the published protocol trains on all of train).
    """

    modality: str = "rgb"
    num_segments: int = 3
    new_length: int = 1
    crop_size: int = 224
    sampling: str = "tsn"
    frame_interval: int = 2
    scale_size: int | None = None
    flip: bool = True
    scales: tuple[float, ...] = (1.0, 0.875, 0.75, 0.66)
    more_fix_crop: bool = True
    shuffle_buffer: int = 128
    train_split: str = "train"
    validation_split: str = VALIDATION_SPLIT_AUTO
    validation_holdout: float = 0.0


@dataclass(frozen=True)
class ModelConfig:
    """The network: see actrec.models.segment_model.build_segment_model.

    architecture: "tsn" or "tsm" (TemporalShift; ResNet family and MobileNetV2 only).
    backbone: a name from actrec.models.backbones.backbone_names().
    weights: "imagenet", "none" (random initialisation) or the path of a no-top weight file.
    dropout: rate before the classifier, in [0, 1).
    partial_bn: freeze every BatchNorm but the first (TSN); None: True for TSN, False for TSM.
    shift_fraction: fraction of the channels shifted each way (TSM: 1/8).
    shift_placement: "blockres" (in the residual branch) or "block" (on the block input).
    input_size: the model's frame side; None: data.crop_size (the only value that fits).
    batch_norm_momentum: momentum of every BatchNorm's moving statistics; None keeps the
        backbone's own (0.99, MobileNetV2 0.999: right for fine-tuning ImageNet weights, too
        slow for a few hundred steps from scratch, where 0.9 lets evaluation statistics settle).
    remat: rematerialise the backbone's blocks (actrec.models.remat): their activations are
        recomputed in the backward pass instead of kept; less memory, more compute, the same
        values, gradients and weights.
    """

    architecture: str = "tsn"
    backbone: str = "resnet50"
    weights: str = "imagenet"
    dropout: float = 0.8
    partial_bn: bool | None = None
    shift_fraction: float = 0.125
    shift_placement: str = "blockres"
    input_size: int | None = None
    batch_norm_momentum: float | None = None
    remat: bool = False


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation: the batch schedule, the learning rate and the synchronisation.

    Global batch of epoch e (actrec.train.schedule.global_batch_size):
        B_e = floor(batch_size * batch_growth ** floor(e / batch_growth_every)),
        capped at max_batch_size; constant when batch_growth_every is 0.
    Learning rate (actrec.train.schedule.learning_rate): lr is the rate at the global batch
    lr_reference_batch (default batch_size); lr_coupling says how it follows B_e:
    "constant" (Smith et al. 2017), "linear" (lr * B_e / B_ref, Goyal et al. 2017) or
    "sqrt" (lr * sqrt(B_e / B_ref)). Warm-up rises linearly, per step, from a tenth of the
    coupled rate to the full rate over warmup_epochs; decay is "step" (x decay_factor at
    each epoch of decay_epochs), "cosine" (to zero over the epochs after warm-up) or "none".

    sync: "allreduce" (gradients averaged every step) or "kavg" (K-step averaging: kavg_steps
        local steps, then parameters averaged; adam_state says what happens to Adam's moments).
    accumulation_steps / max_per_replica_batch: gradient accumulation over micro-batches when
        a replica's share of the global batch is more than it can hold.
    batch_size / max_per_replica_batch may be "auto" (actrec.train.memory): the largest
        per-replica batch that fits the memory budget and runs fastest is probed when the run
        starts. batch_size=auto: the starting global batch is that batch times the replicas
        (lr_reference_batch is then required unless lr_coupling is constant) and it is also
        the limit above which accumulation makes up the share; max_per_replica_batch=auto:
        the global schedule stays, the probed batch is the accumulation limit. The run
        directory's recipe.yaml holds the numbers chosen, which a resumed run reuses.
    clip_norm: global gradient norm clip (TSN / TSM: 20); None disables it.
    weight_decay / weight_decay_mode: "coupled" L2 as Caffe and PyTorch SGD apply it
        (weight_decay * w joins the gradient and goes through momentum; what published
        values mean) or "decoupled" (Keras' weight_decay: w -= lr * weight_decay * w, about
        10x weaker at momentum 0.9). Biases and BatchNorm parameters never decay.
    bias_lr_mult / first_conv_lr_mult / classifier_lr_mult: learning-rate multipliers of
        the official code (actrec.train.param_groups): every bias (TSN / TSM: 2), the first
        convolution (the flow stream: 5, its bias 5 x 2), the new classifier (TSM from
        ImageNet, `fc_lr5`: 5, its bias 5 x 2); 1 means none.

    Divergence (actrec.train.divergence): a non-finite loss, a loss above loss_upper_bound,
    or one above loss_explosion_factor x the mean of the 5 before it (None: that test is
    off) rolls every worker back to the last checkpoint and continues past the offending
    batches, with the learning rate x recovery_lr_factor after each recovery; the run stops
    with an error after max_recoveries of them (0: at the first divergence).
    """

    epochs: int = 80
    batch_size: int | Literal["auto"] = 32
    batch_growth: float = 1.0
    batch_growth_every: int = 0
    max_batch_size: int | None = None
    lr: float = 0.001
    lr_reference_batch: int | None = None
    lr_coupling: str = "linear"
    warmup_epochs: float = 0.0
    decay: str = "step"
    decay_epochs: tuple[int, ...] = (30, 60)
    decay_factor: float = 0.1
    optimizer: str = "sgd"
    momentum: float = 0.9
    nesterov: bool = False
    weight_decay: float = 5e-4
    weight_decay_mode: str = "coupled"
    bias_lr_mult: float = 1.0
    first_conv_lr_mult: float = 1.0
    classifier_lr_mult: float = 1.0
    clip_norm: float | None = 20.0
    label_smoothing: float = 0.0
    sync: str = "allreduce"
    kavg_steps: int = 1
    adam_state: str = "average"
    mixed_precision: str = "none"
    accumulation_steps: int = 1
    max_per_replica_batch: int | Literal["auto"] | None = None
    loss_upper_bound: float | None = None
    loss_explosion_factor: float | None = None
    max_recoveries: int = 3
    recovery_lr_factor: float = 1.0


@dataclass(frozen=True)
class RuntimeConfig:
    """How the run executes; nothing here changes the optimisation maths.

    strategy: "auto" (multi-worker when TF_CONFIG / Slurm names several workers, mirrored
        with several local GPUs, else one device), "one-device", "mirrored", "multi-worker".
    communication: collective implementation of multi-worker runs: "auto", "ring", "nccl".
    checkpoint_every_steps: 0 = checkpoints at epoch ends only.
    validate_every_epochs: 0 = never.
    steps_per_epoch: None = training videos // global batch (at least 1).
    """

    seed: int = 0
    deterministic: bool = False
    strategy: str = "auto"
    communication: str = "auto"
    checkpoint_every_steps: int = 0
    keep_checkpoints: int = 3
    validate_every_epochs: int = 1
    log_every_steps: int = 10
    steps_per_epoch: int | None = None


@dataclass(frozen=True)
class Recipe:
    """A complete training recipe.

    reference: the paper, the published accuracy and how this recipe departs from it.
    """

    name: str
    description: str = ""
    reference: str = ""
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    runtime: RuntimeConfig = field(default_factory=RuntimeConfig)


SECTION_TYPES: dict[str, type] = {
    "data": DataConfig,
    "model": ModelConfig,
    "train": TrainConfig,
    "runtime": RuntimeConfig,
}

# A YAML 1.1 loader reads "1e-4" as a string (it wants "1.0e-4"); float fields accept it.
_FLOAT_TEXT = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


# --- types -------------------------------------------------------------------------------


def _field_types(section_type: type) -> dict[str, Any]:
    """Field name -> resolved type annotation of a config dataclass."""
    return typing.get_type_hints(section_type)


def section_keys(section: str) -> list[str]:
    """The valid keys of a recipe section ("data", "model", "train", "runtime")."""
    return [item.name for item in dataclasses.fields(SECTION_TYPES[section])]


def _type_name(annotation: Any) -> str:
    """How a field type is written in messages."""
    names = {
        str: "a string",
        int: "a whole number",
        float: "a number",
        bool: "true or false",
        type(None): "null",
    }
    if annotation in names:
        return names[annotation]
    origin = typing.get_origin(annotation)
    if origin is tuple:
        element = typing.get_args(annotation)[0]
        return {int: "a list of whole numbers", float: "a list of numbers"}.get(
            element, f"a list of {_type_name(element)}"
        )
    if origin is Literal:
        return " or ".join(repr(value) for value in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(argument) for argument in typing.get_args(annotation))
    return str(annotation)


class _MismatchError(Exception):
    """A value does not have a field's type (turned into a ConfigError by the caller)."""


def _coerce(value: Any, annotation: Any) -> Any:
    """`value` as `annotation`: int -> float, list -> tuple, numeric text -> float.

    Raises _MismatchError when it cannot be."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in typing.get_args(annotation):
            return None
        for argument in typing.get_args(annotation):
            if argument is type(None):
                continue
            try:
                return _coerce(value, argument)
            except _MismatchError:
                continue
        raise _MismatchError
    if origin is Literal:
        if isinstance(value, str) and value in typing.get_args(annotation):
            return value
        raise _MismatchError
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise _MismatchError
        element = typing.get_args(annotation)[0]
        return tuple(_coerce(item, element) for item in value)
    if annotation is bool:
        if isinstance(value, bool):
            return value
        raise _MismatchError
    if annotation is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _MismatchError
    if annotation is float:
        is_number = isinstance(value, int | float) and not isinstance(value, bool)
        is_number_text = isinstance(value, str) and _FLOAT_TEXT.match(value.strip())
        if not (is_number or is_number_text):
            raise _MismatchError
        number = float(value)
        if not math.isfinite(number):
            raise _MismatchError
        return number
    if annotation is str:
        if isinstance(value, str):
            return value
        raise _MismatchError
    raise _MismatchError


def _coerced_field(section: str, key: str, value: Any, annotation: Any, origin: str) -> Any:
    try:
        return _coerce(value, annotation)
    except _MismatchError:
        raise ConfigError(
            f"{origin}: {section}.{key}={value!r} has the wrong type; expected "
            f"{_type_name(annotation)}"
        ) from None


def _unknown_key_message(origin: str, section: str, key: str, valid: list[str]) -> str:
    close = difflib.get_close_matches(str(key), valid, n=1)
    hint = f" (did you mean {section}.{close[0]}?)" if close else ""
    return (
        f"{origin}: unknown key {section}.{key}{hint}; valid keys of '{section}': "
        f"{', '.join(valid)}"
    )


def _section_from_mapping(section: str, values: Any, origin: str) -> Any:
    """A section dataclass from a YAML mapping (missing keys take their defaults)."""
    section_type = SECTION_TYPES[section]
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise ConfigError(
            f"{origin}: section '{section}' must be a mapping of key: value, got {values!r}"
        )
    types_by_key = _field_types(section_type)
    valid = list(types_by_key)
    arguments = {}
    for key, value in values.items():
        if key not in types_by_key:
            raise ConfigError(_unknown_key_message(origin, section, key, valid))
        arguments[key] = _coerced_field(section, key, value, types_by_key[key], origin)
    return section_type(**arguments)


def recipe_from_dict(values: Any, origin: str = "recipe", default_name: str = "") -> Recipe:
    """A Recipe from the dictionary form (`recipe_to_dict`); keys and types checked.

    origin: what the dictionary came from (a file path), named in every error.
    default_name: the name when the dictionary has none (a file's stem).
    """
    if not isinstance(values, dict):
        raise ConfigError(
            f"{origin}: a recipe must be a mapping with the keys "
            f"{', '.join(TEXT_KEYS + SECTIONS)}; got {type(values).__name__}"
        )
    valid = list(TEXT_KEYS + SECTIONS)
    for key in values:
        if key not in valid:
            close = difflib.get_close_matches(str(key), valid, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ConfigError(
                f"{origin}: unknown top-level key {key!r}{hint}; valid keys: {', '.join(valid)}"
            )
    texts = {}
    for key in TEXT_KEYS:
        value = values.get(key, default_name if key == "name" else "")
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise ConfigError(f"{origin}: {key}={value!r} has the wrong type; expected a string")
        texts[key] = value
    if not texts["name"]:
        raise ConfigError(f"{origin}: the recipe has no name; add `name: my-recipe`")
    sections = {
        section: _section_from_mapping(section, values.get(section), origin) for section in SECTIONS
    }
    return Recipe(**texts, **sections)


def recipe_to_dict(recipe: Recipe) -> dict:
    """The plain (YAML-ready) form: name, description, reference, then one dict per section.

    Tuples become lists; `recipe_from_dict(recipe_to_dict(r)) == r`.
    """
    result: dict[str, Any] = {key: getattr(recipe, key) for key in TEXT_KEYS}
    for section in SECTIONS:
        config = getattr(recipe, section)
        result[section] = {
            item.name: _plain(getattr(config, item.name)) for item in dataclasses.fields(config)
        }
    return result


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


# --- YAML ---------------------------------------------------------------------------------


class _RecipeDumper(yaml.SafeDumper):
    """Lists in flow style ([30, 60]); multi-line strings as literal blocks."""


def _represent_list(dumper: yaml.SafeDumper, value: list) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=True)


def _represent_text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_RecipeDumper.add_representer(list, _represent_list)
_RecipeDumper.add_representer(str, _represent_text)


def recipe_to_yaml(recipe: Recipe) -> str:
    """The recipe as YAML text that `load_recipe` reads back to an equal Recipe."""
    return yaml.dump(
        recipe_to_dict(recipe),
        Dumper=_RecipeDumper,
        sort_keys=False,
        allow_unicode=True,
        width=100,
    )


def recipe_from_yaml(text: str, origin: str = "recipe", default_name: str = "") -> Recipe:
    """A Recipe from YAML text; errors name `origin`."""
    try:
        values = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"{origin}: not valid YAML: {error}") from None
    return recipe_from_dict(values, origin, default_name)


def dump_recipe(recipe: Recipe, path: Path | str) -> None:
    """Write `recipe` as YAML to `path` atomically (a crash leaves the old file or the new)."""
    from actrec.atomic import write_text_atomic

    write_text_atomic(path, recipe_to_yaml(recipe))


def _builtin_folder():
    return resources.files("actrec").joinpath(RECIPES_PACKAGE_FOLDER)


def builtin_recipe_names() -> list[str]:
    """The names of the built-in recipes (actrec/recipes/*.yaml), sorted."""
    folder = _builtin_folder()
    if not folder.is_dir():
        return []
    return sorted(
        entry.name.rsplit(".", 1)[0]
        for entry in folder.iterdir()
        if entry.is_file() and entry.name.endswith(RECIPE_SUFFIXES)
    )


def _builtin_text(name: str) -> str:
    return _builtin_folder().joinpath(f"{name}.yaml").read_text(encoding="utf-8")


def load_recipe(name_or_path: str | Path) -> Recipe:
    """A built-in recipe by name, or the recipe in a YAML file.

    Keys and types are checked (ConfigError naming the file and the key); values are checked
    by `validate_recipe`, after any overrides.
    """
    text = str(name_or_path)
    if not isinstance(name_or_path, Path) and text in builtin_recipe_names():
        return recipe_from_yaml(_builtin_text(text), f"built-in recipe {text}", text)
    path = Path(name_or_path)
    if path.is_file():
        try:
            content = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"{path}: cannot read the recipe file: {error}") from None
        return recipe_from_yaml(content, str(path), path.stem)
    if path.exists():
        raise ConfigError(f"{path} is not a file; give a recipe YAML file or a built-in name")
    names = ", ".join(builtin_recipe_names())
    if path.suffix in RECIPE_SUFFIXES or len(path.parts) > 1:
        raise ConfigError(
            f"recipe file {path} does not exist; give an existing YAML file or a built-in "
            f"recipe: {names}"
        )
    close = difflib.get_close_matches(text, builtin_recipe_names(), n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise ConfigError(
        f"unknown recipe {text!r}{hint}; built-in recipes: {names} (or give the path of a "
        "YAML file; `actrec recipes` lists them)"
    )


# --- overrides ----------------------------------------------------------------------------


def _parsed_override(setting: str) -> tuple[str, str | None, Any]:
    """("section", "key", value) or (text key, None, value) from "section.key=value"."""
    example = "e.g. train.lr=0.01, data.num_segments=8, train.decay_epochs=[10,20]"
    if "=" not in setting:
        raise ConfigError(f"override {setting!r} has no '='; write SECTION.KEY=VALUE, {example}")
    target, raw_value = setting.split("=", 1)
    target = target.strip()
    try:
        value = yaml.safe_load(raw_value) if raw_value.strip() else ""
    except yaml.YAMLError as error:
        first_line = str(error).splitlines()[0]
        raise ConfigError(
            f"override {setting!r}: the value {raw_value!r} is not valid YAML ({first_line}); "
            f"quote text and write lists as [a, b], {example}"
        ) from None
    if target in TEXT_KEYS:
        return target, None, value
    parts = target.split(".")
    if len(parts) != 2 or not all(parts):
        raise ConfigError(
            f"override {setting!r}: {target!r} is not SECTION.KEY (sections: "
            f"{', '.join(SECTIONS)}; or one of {', '.join(TEXT_KEYS)}), {example}"
        )
    section, key = parts
    if section not in SECTION_TYPES:
        raise ConfigError(
            f"override {setting!r}: unknown section {section!r}; sections: {', '.join(SECTIONS)}"
        )
    return section, key, value


def apply_overrides(recipe: Recipe, settings: list[str] | tuple[str, ...]) -> Recipe:
    """`recipe` with each "section.key=value" applied in order (values parsed as YAML).

    Types are checked against the field (int -> float accepted; null for optional fields;
    lists for tuples). Values are not validated here: call `validate_recipe` afterwards.
    """
    for setting in settings:
        section, key, value = _parsed_override(setting)
        origin = f"override {setting!r}"
        if key is None:
            if not isinstance(value, str) or (section == "name" and not value):
                raise ConfigError(f"{origin}: {section}={value!r} must be a non-empty string")
            recipe = dataclasses.replace(recipe, **{section: value})
            continue
        config = getattr(recipe, section)
        types_by_key = _field_types(type(config))
        if key not in types_by_key:
            raise ConfigError(_unknown_key_message(origin, section, key, list(types_by_key)))
        coerced = _coerced_field(section, key, value, types_by_key[key], origin)
        recipe = dataclasses.replace(
            recipe, **{section: dataclasses.replace(config, **{key: coerced})}
        )
    return recipe


# --- validation ---------------------------------------------------------------------------


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
        for key, annotation in _field_types(section_type).items():
            value = getattr(config, key)
            coerced = _coerced_field(section, key, value, annotation, "recipe")
            if coerced != value:
                raise ConfigError(
                    f"recipe: {section}.{key}={value!r} has the wrong type; expected "
                    f"{_type_name(annotation)}"
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
    from actrec.models.backbones import BACKBONES

    _require_choice("model", model, "architecture", ARCHITECTURES)
    if model.backbone not in BACKBONES:
        raise _invalid(
            "model", "backbone", model.backbone, f"choose one of: {', '.join(BACKBONES)}"
        )
    if model.architecture == "tsm" and BACKBONES[model.backbone].shift_family is None:
        shiftable = [name for name, spec in BACKBONES.items() if spec.shift_family is not None]
        raise _invalid(
            "model",
            "backbone",
            model.backbone,
            f"TSM inserts temporal shifts into residual blocks of: {', '.join(shiftable)}; "
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


# --- derived values -----------------------------------------------------------------------


def resolved_partial_bn(model: ModelConfig) -> bool:
    """partial_bn with None resolved: True for TSN, False for TSM."""
    return model.architecture == "tsn" if model.partial_bn is None else model.partial_bn


def resolved_input_size(recipe: Recipe) -> int:
    """The model's frame side: model.input_size, else data.crop_size."""
    return recipe.model.input_size or recipe.data.crop_size


def clip_spec(recipe: Recipe, training: bool) -> ClipSpec:
    """The input pipeline's ClipSpec: normalisation "none" (the models normalise inside
    the graph); flip only in training."""
    from actrec.data.pipeline import ClipSpec

    data = recipe.data
    return ClipSpec(
        modality=data.modality,
        num_segments=data.num_segments,
        new_length=data.new_length,
        crop_size=data.crop_size,
        sampling=data.sampling,
        frame_interval=data.frame_interval,
        scale_size=data.scale_size,
        normalization="none",
        flip=data.flip and training,
        scales=tuple(data.scales),
        more_fixed_crops=data.more_fix_crop,
    )
