"""Recipes: what to train and how, as frozen dataclasses that round-trip through YAML.

    choices.py        the Literal alias of each choice: the one list of its allowed values
    recipe.py         the dataclasses (DataConfig, ModelConfig, TrainConfig, RuntimeConfig,
                      Recipe), each choice field typed with its alias
    coerce.py         values read from YAML / `--set` made into a field's type
    files.py          the dictionary and YAML forms, `load_recipe`
    inheritance.py    `extends:` (a recipe over another or a base), built-in recipe names
    overrides.py      `apply_overrides` ("section.key=value")
    validate.py       `validate_recipe`: values and their combinations (checks.py: the
                      checks; validate_train.py: the train section's)

    backbones.py      the backbone registry (names, input sizes, weight files, TSM support)
    bounds.py         fields that carry their own check (`at_least`, `checked`)
    recipe_sources.py the fidelity tables of the built-in recipes (recipes/sources/*.yaml)

The order a command follows (each name imported from its module):

    recipe = apply_overrides(load_recipe(name_or_path), settings); validate_recipe(recipe)

This package imports neither TensorFlow, Keras, OpenCV nor actrec.data / actrec.models
(which import their choices from here).
"""
