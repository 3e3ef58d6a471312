"""Recipes that extend another: `extends:` resolved into one mapping, as mmaction2's `_base_`.

    name: my-ucf101-run
    extends: tsn-rgb-ucf101     # a built-in recipe, a built-in base (base/tsm) or a YAML
    train:                      # file (relative to this one); then only what differs
      epochs: 10

A recipe read from a run or an export folder (`read_folder_recipe_file`) extends a built-in
recipe or base, or a file inside that folder, and nothing else
(actrec.config.confined_files): the folder may have been handed over, and its recipe must
not read the reader's files.

Within each section the extending file's keys replace the parent's, key by key; a key
neither sets keeps the dataclass default (actrec.config.recipe). `name`, `description` and
`reference` belong to the file that says them and are not inherited. Built-in recipes are
written this way (actrec/recipes/*.yaml over actrec/recipes/base/*.yaml), so a value lives
in one file and a new option with a default touches no recipe.

This module reads YAML only; the resolved mapping becomes a Recipe in actrec.config.files.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from actrec.config.confined_files import file_in_folder
from actrec.config.recipe import SECTIONS
from actrec.errors import ConfigError

EXTENDS_KEY = "extends"
RECIPE_SUFFIXES = (".yaml", ".yml")
RECIPES_PACKAGE_FOLDER = "recipes"
BASE_FOLDER = "base"
"""Built-in bases (actrec/recipes/base/NAME.yaml, named `base/NAME`): shared values of a
family, not recipes to train on their own."""


@dataclass(frozen=True)
class RecipeFile:
    """One recipe file read: its mapping (extends not resolved) and where it came from.

    origin: what errors name ("built-in recipe tsn-rgb-ucf101", or the file's path).
    folder: where a relative `extends` path is looked for (None: the current folder).
    confined_to: the run or export folder the file was read from, which its `extends` may
        not leave (None: a recipe of the user's own, which may extend any path).
    fix: what a refusal of a confined file's `extends` tells the user to do.
    """

    name: str
    origin: str
    values: dict
    folder: Path | None = None
    confined_to: Path | None = None
    fix: str = ""


def builtin_folder():
    """The package folder of the built-in recipes (an importlib Traversable)."""
    return resources.files("actrec").joinpath(RECIPES_PACKAGE_FOLDER)


def builtin_recipe_names() -> list[str]:
    """The names of the built-in recipes (actrec/recipes/*.yaml; bases excluded), sorted."""
    folder = builtin_folder()
    if not folder.is_dir():
        return []
    return sorted(
        entry.name.rsplit(".", 1)[0]
        for entry in folder.iterdir()
        if entry.is_file() and entry.name.endswith(RECIPE_SUFFIXES)
    )


def builtin_base_names() -> list[str]:
    """The built-in bases, as `extends` names them ("base/tsm"), sorted."""
    folder = builtin_folder().joinpath(BASE_FOLDER)
    if not folder.is_dir():
        return []
    return sorted(
        f"{BASE_FOLDER}/{entry.name.rsplit('.', 1)[0]}"
        for entry in folder.iterdir()
        if entry.is_file() and entry.name.endswith(RECIPE_SUFFIXES)
    )


def parsed_mapping(text: str, origin: str) -> Any:
    """The YAML value of `text`; ConfigError naming `origin` when it is not YAML."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"{origin}: not valid YAML: {error}") from None


def _builtin_file(name: str) -> RecipeFile | None:
    if name not in builtin_recipe_names() and name not in builtin_base_names():
        return None
    text = builtin_folder().joinpath(f"{name}.yaml").read_text(encoding="utf-8")
    kind = "built-in base" if name.startswith(f"{BASE_FOLDER}/") else "built-in recipe"
    origin = f"{kind} {name}"
    return RecipeFile(name, origin, parsed_mapping(text, origin))


def _path_file(path: Path, confined_to: Path | None = None, fix: str = "") -> RecipeFile:
    try:
        content = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read the recipe file: {error}") from None
    values = parsed_mapping(content, str(path))
    return RecipeFile(path.stem, str(path), values, path.parent, confined_to, fix)


def read_folder_recipe_file(folder: Path | str, name: str, fix: str) -> RecipeFile:
    """The recipe file `name` of a run or export `folder`, confined to it: the file, and
    every file its `extends` chain names, must lead inside the folder (symlinks resolved);
    ConfigError naming the file and `fix` otherwise, or when it is missing."""
    folder = Path(folder)
    path = file_in_folder(folder, name, "the recipe", fix)
    if not path.is_file():
        raise ConfigError(f"{path}: the folder's recipe file is missing; {fix}")
    return _path_file(path, folder, fix)


def read_recipe_file(name_or_path: str | Path) -> RecipeFile:
    """A built-in recipe (or base) by name, or a YAML file by path; ConfigError naming the
    closest built-in recipe when it is neither."""
    text = str(name_or_path)
    if not isinstance(name_or_path, Path):
        builtin = _builtin_file(text)
        if builtin is not None:
            return builtin
    path = Path(name_or_path)
    if path.is_file():
        return _path_file(path)
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


def _parent_file(child: RecipeFile, parent: Any) -> RecipeFile:
    """The file `child` extends: a built-in name, else a path relative to the child's folder."""
    if not isinstance(parent, str) or not parent.strip():
        raise ConfigError(
            f"{child.origin}: extends={parent!r} must name one recipe: a built-in recipe, "
            f"a built-in base ({', '.join(builtin_base_names())}) or a YAML file"
        )
    builtin = _builtin_file(parent)
    if builtin is not None:
        return builtin
    if child.confined_to is not None:
        return _confined_parent(child, parent)
    path = Path(parent).expanduser()
    if not path.is_absolute() and child.folder is not None:
        path = child.folder / path
    if path.is_file():
        return _path_file(path)
    raise ConfigError(
        f"{child.origin}: extends {parent!r}, which is neither a built-in recipe "
        f"({', '.join(builtin_recipe_names())}), a built-in base "
        f"({', '.join(builtin_base_names())}) nor an existing file"
        + (f" (looked for {path})" if child.folder is not None else "")
    )


def _confined_parent(child: RecipeFile, parent: str) -> RecipeFile:
    """The file `child` (read from a run or export folder) extends: a file inside that
    folder, `parent` relative to the child's own folder."""
    folder = child.confined_to
    fix = (
        "a shared folder's recipe may extend a built-in recipe or base "
        f"({', '.join(builtin_base_names())}) or a file inside the folder; {child.fix}"
    )
    what = f"{Path(child.origin).name}'s extends"
    if parent.startswith("~"):  # not expanded: refused as the home folder it means
        file_in_folder(folder, parent, what, fix)
    path = file_in_folder(folder, child.folder.relative_to(folder) / parent, what, fix)
    if not path.is_file():
        raise ConfigError(
            f"{child.origin}: extends {parent!r}, which is neither a built-in recipe "
            f"({', '.join(builtin_recipe_names())}) nor a file inside {folder}; {fix}"
        )
    return _path_file(path, folder, child.fix)


def recipe_chain(recipe_file: RecipeFile) -> list[RecipeFile]:
    """`recipe_file` and the files it extends, the most basic first; ConfigError on a loop."""
    chain = [recipe_file]
    while isinstance(chain[-1].values, dict) and EXTENDS_KEY in chain[-1].values:
        parent = _parent_file(chain[-1], chain[-1].values[EXTENDS_KEY])
        if parent.origin in [item.origin for item in chain]:
            loop = " -> ".join([item.name for item in chain] + [parent.name])
            raise ConfigError(f"{recipe_file.origin}: recipes extend each other in a loop: {loop}")
        chain.append(parent)
    return chain[::-1]


def _sections(item: RecipeFile) -> dict:
    if not isinstance(item.values, dict):
        return {}
    return {section: item.values.get(section) for section in SECTIONS if section in item.values}


def resolved_mapping(recipe_file: RecipeFile) -> Any:
    """The recipe's mapping with `extends` resolved: sections merged key by key over the
    chain, the text keys of `recipe_file` alone. Not a mapping: returned as it is (the
    caller's error names the type)."""
    if not isinstance(recipe_file.values, dict):
        return recipe_file.values
    chain = recipe_chain(recipe_file)
    merged: dict[str, Any] = {
        key: value for key, value in recipe_file.values.items() if key != EXTENDS_KEY
    }
    for section in SECTIONS:
        values: dict[str, Any] = {}
        for item in chain:
            own = _sections(item).get(section)
            if own is None:
                continue
            if not isinstance(own, dict):
                raise ConfigError(
                    f"{item.origin}: section '{section}' must be a mapping of key: value, "
                    f"got {own!r}"
                )
            values.update(own)
        if values or section in merged:
            merged[section] = values
    return merged


def fields_set(recipe_file: RecipeFile) -> dict[str, str]:
    """ "section.key" -> the name of the file (in the chain) that sets it last: the fields a
    recipe states, as against those left at the dataclass default."""
    result: dict[str, str] = {}
    for item in recipe_chain(recipe_file):
        for section, values in _sections(item).items():
            for key in values or {}:
                result[f"{section}.{key}"] = item.name
    return result
