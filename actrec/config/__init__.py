"""Recipes: what to train and how, as frozen dataclasses that round-trip through YAML.

    choices.py        the Literal alias of each choice: the one list of its allowed values
    recipe.py         the dataclasses (DataConfig, ModelConfig, TrainConfig, RuntimeConfig,
                      Recipe), each choice field typed with its alias
    coerce.py         values read from YAML / `--set` made into a field's type
    files.py          the dictionary and YAML forms, built-in recipes, `load_recipe`
    overrides.py      `apply_overrides` ("section.key=value")
    validate.py       `validate_recipe`: values and their combinations (checks.py: the
                      checks; validate_train.py: the train section's)

The order a command follows:

    recipe = apply_overrides(load_recipe(name_or_path), settings); validate_recipe(recipe)

This package imports neither TensorFlow, Keras, OpenCV nor actrec.data / actrec.models
(which import their choices from here).
"""

from actrec.config.choices import (
    ADAM_STATES,
    ARCHITECTURES,
    BACKBONE_NAMES,
    COMMUNICATIONS,
    DECAYS,
    LR_COUPLINGS,
    MIXED_PRECISIONS,
    MODALITIES,
    NAMED_WEIGHTS,
    OPTIMIZERS,
    SAMPLINGS,
    SHIFT_PLACEMENTS,
    SHIFTABLE_BACKBONES,
    STRATEGIES,
    SYNCS,
    WEIGHT_DECAY_MODES,
)
from actrec.config.files import (
    RECIPE_SUFFIXES,
    RECIPES_PACKAGE_FOLDER,
    builtin_recipe_names,
    dump_recipe,
    load_recipe,
    recipe_from_dict,
    recipe_from_yaml,
    recipe_to_dict,
    recipe_to_yaml,
)
from actrec.config.overrides import apply_overrides
from actrec.config.recipe import (
    AUTO,
    LR_MULT_KEYS,
    MAX_VALIDATION_HOLDOUT,
    SECTION_TYPES,
    SECTIONS,
    TEST_SPLIT,
    TEXT_KEYS,
    VALIDATION_SPLIT_AUTO,
    VALIDATION_SPLIT_NONE,
    DataConfig,
    ModelConfig,
    Recipe,
    RuntimeConfig,
    TrainConfig,
    resolved_input_size,
    resolved_partial_bn,
    section_keys,
)
from actrec.config.validate import validate_recipe

__all__ = [
    "ADAM_STATES",
    "ARCHITECTURES",
    "AUTO",
    "BACKBONE_NAMES",
    "COMMUNICATIONS",
    "DECAYS",
    "LR_COUPLINGS",
    "LR_MULT_KEYS",
    "MAX_VALIDATION_HOLDOUT",
    "MIXED_PRECISIONS",
    "MODALITIES",
    "NAMED_WEIGHTS",
    "OPTIMIZERS",
    "RECIPES_PACKAGE_FOLDER",
    "RECIPE_SUFFIXES",
    "SAMPLINGS",
    "SECTIONS",
    "SECTION_TYPES",
    "SHIFTABLE_BACKBONES",
    "SHIFT_PLACEMENTS",
    "STRATEGIES",
    "SYNCS",
    "TEST_SPLIT",
    "TEXT_KEYS",
    "VALIDATION_SPLIT_AUTO",
    "VALIDATION_SPLIT_NONE",
    "WEIGHT_DECAY_MODES",
    "DataConfig",
    "ModelConfig",
    "Recipe",
    "RuntimeConfig",
    "TrainConfig",
    "apply_overrides",
    "builtin_recipe_names",
    "dump_recipe",
    "load_recipe",
    "recipe_from_dict",
    "recipe_from_yaml",
    "recipe_to_dict",
    "recipe_to_yaml",
    "resolved_input_size",
    "resolved_partial_bn",
    "section_keys",
    "validate_recipe",
]
