"""`--set` overrides: "section.key=value" settings applied to a recipe (values parsed as YAML).

The order a command follows:

    recipe = apply_overrides(load_recipe(name_or_path), settings); validate_recipe(recipe)
"""

from __future__ import annotations

import dataclasses
from typing import Any

import yaml

from actrec.config.coerce import coerced_field, field_types, unknown_key_message
from actrec.config.recipe import SECTION_TYPES, SECTIONS, TEXT_KEYS, Recipe
from actrec.errors import ConfigError


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
        types_by_key = field_types(type(config))
        if key not in types_by_key:
            raise ConfigError(unknown_key_message(origin, section, key, list(types_by_key)))
        coerced = coerced_field(section, key, value, types_by_key[key], origin)
        recipe = dataclasses.replace(
            recipe, **{section: dataclasses.replace(config, **{key: coerced})}
        )
    return recipe


def overridden_settings(settings: list[str] | tuple[str, ...]) -> frozenset[str]:
    """The "section.key" (or text key) each "section.key=value" setting names."""
    names = set()
    for setting in settings:
        section, key, _ = _parsed_override(setting)
        names.add(section if key is None else f"{section}.{key}")
    return frozenset(names)


def setting_value(recipe: Recipe, setting: str) -> Any:
    """The value of `setting` ("section.key") in `recipe`."""
    section, key = setting.split(".")
    return getattr(getattr(recipe, section), key)


def with_settings(recipe: Recipe, values: dict[str, Any]) -> Recipe:
    """`recipe` with `values` ({"section.key": value}) set, unchecked (validate_recipe
    checks the whole)."""
    sections: dict[str, dict[str, Any]] = {}
    for setting, value in values.items():
        section, key = setting.split(".")
        sections.setdefault(section, {})[key] = value
    return dataclasses.replace(
        recipe,
        **{
            section: dataclasses.replace(getattr(recipe, section), **changes)
            for section, changes in sections.items()
        },
    )
