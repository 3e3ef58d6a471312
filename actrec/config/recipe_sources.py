"""Fidelity tables: every field a built-in recipe sets, its value and where it comes from.

Each built-in recipe (or base) NAME has a table actrec/recipes/sources/NAME.yaml:

    recipe: NAME
    extends: OTHER            # as the recipe does: rows this table does not list are OTHER's
    citations:                # short name -> repository@commit or paper, used in sources
      tsn: yjxiong/temporal-segment-networks@2c5e5e7
    fields:
      SECTION.KEY: {value: V, source: "tsn models/.../file.prototxt:16 (base_lr: 0.001)"}
      SECTION.KEY: {value: V, actrec: "why (no published counterpart)"}
      SECTION.KEY: {value: V, source: "...", deviation: "what the source has, and why not"}

`table_problems` compares a table with its recipe file: a field the recipe (or a recipe it
extends) sets without a row, a row for a field no file of the recipe sets, a value that
differs from the recipe's, a row with neither source nor actrec reason. The tests require
none, so a recipe cannot drift from its sources silently. Fields no file sets keep the
dataclass default and have no row (`actrec recipes --show NAME --sources` marks them).

This module imports neither TensorFlow nor Keras.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import resources

import yaml

from actrec.config.files import load_recipe, recipe_from_dict, recipe_to_dict
from actrec.config.inheritance import builtin_recipe_names, fields_set, read_recipe_file
from actrec.config.recipe import SECTIONS, Recipe
from actrec.errors import ConfigError

SOURCES_FOLDER = "sources"
ROW_KINDS = ("source", "actrec", "deviation")


@dataclass(frozen=True)
class SourceRow:
    """One field of a recipe: its value, and its published source or actrec's reason.

    kind: "source" (the value is the source's), "deviation" (the source has another value:
    `deviation` says which and why) or "actrec" (no published counterpart: `reason`).
    """

    field: str
    value: object  # any recipe field's value (number, text, list, None)
    kind: str
    source: str = ""
    deviation: str = ""
    reason: str = ""


@dataclass(frozen=True)
class SourceTable:
    recipe: str
    citations: dict
    rows: tuple[SourceRow, ...]

    def row(self, field: str) -> SourceRow | None:
        return next((row for row in self.rows if row.field == field), None)


def _table_text(name: str) -> str | None:
    path = resources.files("actrec").joinpath("recipes", SOURCES_FOLDER, *f"{name}.yaml".split("/"))
    return path.read_text(encoding="utf-8") if path.is_file() else None


def _raw_table(name: str, seen: tuple[str, ...] = ()) -> dict:
    """The table's mapping with `extends` resolved (fields and citations merged)."""
    if name in seen:
        raise ConfigError(f"source tables extend each other in a loop: {' -> '.join(seen)}")
    text = _table_text(name)
    if text is None:
        raise ConfigError(
            f"the built-in recipe {name!r} has no source table (actrec/recipes/"
            f"{SOURCES_FOLDER}/{name}.yaml); `--sources` is available for the built-in recipes: "
            f"{', '.join(builtin_recipe_names())}"
        )
    raw = yaml.safe_load(text) or {}
    parent = raw.get("extends")
    if not parent:
        return raw
    base = _raw_table(parent, (*seen, name))
    return {
        "recipe": raw.get("recipe", name),
        "citations": {**base.get("citations", {}), **raw.get("citations", {})},
        "fields": {**base.get("fields", {}), **raw.get("fields", {})},
    }


def _row(field: str, entry) -> SourceRow:
    if not isinstance(entry, dict) or "value" not in entry:
        raise ConfigError(f"source table row {field}: write {{value: V, source: ...}}")
    source, reason = str(entry.get("source", "")), str(entry.get("actrec", ""))
    deviation = str(entry.get("deviation", ""))
    kind = "deviation" if deviation else ("source" if source else "actrec")
    return SourceRow(field, entry["value"], kind, source, deviation, reason)


def source_table(name: str) -> SourceTable:
    """The fidelity table of the built-in recipe `name` (ConfigError when it has none)."""
    raw = _raw_table(name)
    fields = raw.get("fields") or {}
    return SourceTable(
        recipe=str(raw.get("recipe", name)),
        citations=dict(raw.get("citations") or {}),
        rows=tuple(_row(field, entry) for field, entry in fields.items()),
    )


def recipe_fields(recipe: Recipe) -> dict[str, object]:
    """ "section.key" -> value of every field of `recipe`, in recipe order."""
    plain = recipe_to_dict(recipe)
    return {
        f"{section}.{key}": value for section in SECTIONS for key, value in plain[section].items()
    }


def _same(first, second) -> bool:
    if isinstance(first, float) or isinstance(second, float):
        try:
            return math.isclose(float(first), float(second), rel_tol=1e-9, abs_tol=1e-12)
        except (TypeError, ValueError):
            return False
    if isinstance(first, list | tuple) and isinstance(second, list | tuple):
        return len(first) == len(second) and all(map(_same, first, second))
    return first == second


def _table_values(recipe: Recipe, table: SourceTable) -> dict[str, object]:
    """The table's values, typed as the recipe's fields (through actrec.config's loader)."""
    plain = recipe_to_dict(recipe)
    for row in table.rows:
        section, _, key = row.field.partition(".")
        if section in plain and key in plain[section]:
            plain[section][key] = row.value
    return recipe_fields(recipe_from_dict(plain, f"source table of {table.recipe}"))


def recipe_set_fields(name: str) -> dict[str, str]:
    """ "section.key" -> the file that sets it, for the built-in recipe (or base) `name` and
    the recipes it extends; fields absent keep the dataclass default."""
    return fields_set(read_recipe_file(name))


def table_problems(name: str) -> list[str]:
    """What keeps the table of built-in recipe `name` from describing its recipe file."""
    recipe, table = load_recipe(name), source_table(name)
    fields = recipe_fields(recipe)
    stated = recipe_set_fields(name)
    problems = [f"{field}: no row" for field in stated if table.row(field) is None]
    problems += [
        f"{row.field}: not a field of the recipe" for row in table.rows if row.field not in fields
    ]
    problems += [
        f"{row.field}: a row for a field the recipe does not set"
        for row in table.rows
        if row.field in fields and row.field not in stated
    ]
    if problems:
        return problems
    expected = _table_values(recipe, table)
    for field, value in fields.items():
        if field not in stated:
            continue
        row = table.row(field)
        if not _same(expected[field], value):
            problems.append(f"{field}: the recipe has {value!r}, the table {row.value!r}")
        if not (row.source or row.reason):
            problems.append(f"{field}: the row gives neither a source nor an actrec reason")
        if row.source and row.reason:
            problems.append(f"{field}: the row gives both a source and an actrec reason")
    return problems
