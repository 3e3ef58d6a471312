"""Recipes as files: the dictionary and YAML forms, and the built-in recipes by name.

A recipe is named by its built-in name (actrec/recipes/*.yaml, published hyperparameters)
or by the path of a YAML file with the same sections:

    name: my-recipe
    extends: tsn-rgb-ucf101     # optional: another recipe, then only what differs
    description: ...
    reference: ...
    data: {modality: rgb, num_segments: 3, ...}
    model: {...}
    train: {...}
    runtime: {...}

A section or key left out takes the dataclass default. Keys and types are checked here
(actrec.config.coerce); values by `validate_recipe`.
"""

from __future__ import annotations

import dataclasses
import difflib
from pathlib import Path
from typing import Any

import yaml

from actrec.config.coerce import coerced_field, field_types, unknown_key_message
from actrec.config.inheritance import (
    RecipeFile,
    parsed_mapping,
    read_folder_recipe_file,
    read_recipe_file,
    resolved_mapping,
)
from actrec.config.recipe import SECTION_TYPES, SECTIONS, TEXT_KEYS, Recipe
from actrec.errors import ConfigError
from actrec.files.atomic import write_text_atomic


def _section_from_mapping(section: str, values: Any, origin: str) -> Any:
    """A section dataclass from a YAML mapping (missing keys take their defaults)."""
    section_type = SECTION_TYPES[section]
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise ConfigError(
            f"{origin}: section '{section}' must be a mapping of key: value, got {values!r}"
        )
    types_by_key = field_types(section_type)
    valid = list(types_by_key)
    arguments = {}
    for key, value in values.items():
        if key not in types_by_key:
            raise ConfigError(unknown_key_message(origin, section, key, valid))
        arguments[key] = coerced_field(section, key, value, types_by_key[key], origin)
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
    """A Recipe from YAML text (an `extends` names a built-in recipe or a file relative to
    the current folder); errors name `origin`."""
    recipe_file = RecipeFile(default_name, origin, parsed_mapping(text, origin))
    return recipe_from_dict(resolved_mapping(recipe_file), origin, default_name)


def dump_recipe(recipe: Recipe, path: Path | str) -> None:
    """Write `recipe` as YAML to `path` atomically (a crash leaves the old file or the new)."""
    write_text_atomic(path, recipe_to_yaml(recipe))


def load_recipe(name_or_path: str | Path) -> Recipe:
    """A built-in recipe by name, or the recipe in a YAML file, `extends` resolved
    (actrec.config.inheritance).

    Keys and types are checked (ConfigError naming the file and the key); values are checked
    by `validate_recipe`, after any overrides.
    """
    recipe_file = read_recipe_file(name_or_path)
    return recipe_from_dict(resolved_mapping(recipe_file), recipe_file.origin, recipe_file.name)


def load_folder_recipe(folder: Path | str, name: str, fix: str) -> Recipe:
    """The recipe `name` of a run or export `folder`, as `load_recipe` reads it, confined to
    the folder: the file and whatever its `extends` names lead inside it, or are built-in
    (actrec.config.inheritance.read_folder_recipe_file); ConfigError naming the file and
    `fix` otherwise."""
    recipe_file = read_folder_recipe_file(folder, name, fix)
    return recipe_from_dict(resolved_mapping(recipe_file), recipe_file.origin, recipe_file.name)
