"""One registry per list: the command line, the config and the code offer exactly what each
registry holds, and every entry works (tests run over the registries, not over copies)."""

from __future__ import annotations

import importlib
import re

import click
import numpy as np
import pytest
from actrec_cli.main import main as cli_main
from repo_paths import REPO_ROOT

from actrec.config.inheritance import builtin_recipe_names
from actrec.data.format.flow_methods import FLOW_METHODS, NO_FLOW
from actrec.data.input.crop_layouts import CROP_LAYOUTS
from actrec.data.sources import SOURCES
from actrec.evaluation.protocols import PROTOCOLS


def choices_of(command: str, parameter: str) -> list[str]:
    found = next(p for p in cli_main.commands[command].params if p.name == parameter)
    assert isinstance(found.type, click.Choice)
    return list(found.type.choices)


def test_the_command_line_offers_exactly_the_registries():
    assert choices_of("prepare", "dataset") == list(SOURCES)
    assert choices_of("prepare", "flow") == [*FLOW_METHODS, NO_FLOW]
    assert choices_of("eval", "protocol_name") == list(PROTOCOLS)
    assert choices_of("eval", "crops") == [str(count) for count in CROP_LAYOUTS]


@pytest.mark.parametrize("name", list(SOURCES))
def test_every_dataset_source_has_its_module_and_its_tests(name):
    module_name = SOURCES[name].module_name  # the name with "_" for "-"
    module = importlib.import_module(f"actrec.data.sources.{module_name}")
    assert callable(module.list_videos)
    assert (REPO_ROOT / "tests" / "data" / f"test_sources_{module_name}.py").is_file()


@pytest.mark.parametrize("name", list(PROTOCOLS))
def test_every_protocol_uses_a_registered_crop_layout(name):
    assert PROTOCOLS[name].num_crops in CROP_LAYOUTS


@pytest.mark.parametrize("count", list(CROP_LAYOUTS))
def test_every_crop_layout_cuts_its_number_of_views(count):
    from actrec.data.input.clip_spec import ClipSpec
    from actrec.data.input.views import ViewSpec, crops_of_clip

    spec = ViewSpec(ClipSpec(num_segments=2, crop_size=16), num_crops=count)
    clip = np.random.default_rng(0).uniform(0, 255, (2, 24, 32, 3)).astype("float32")
    assert tuple(crops_of_clip(clip, spec).shape) == (count, 2, 16, 16, 3)


def test_a_crop_count_outside_the_registry_names_every_layout():
    from actrec.data.input.clip_spec import ClipSpec
    from actrec.data.input.views import ViewSpec
    from actrec.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        ViewSpec(ClipSpec(), num_crops=2)
    assert all(f"{count} ({text})" in str(caught.value) for count, text in CROP_LAYOUTS.items())


def table_names(page: str, header: str) -> list[str]:
    """The `name` in the first cell of each row of the table of a docs page whose first
    column is `header`."""
    lines = (REPO_ROOT / "docs" / page).read_text(encoding="utf-8").splitlines()
    first = lines.index(next(line for line in lines if line.startswith(f"| {header} |")))
    rows = []
    for line in lines[first + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(line.split("`")[1])
    return rows


def test_the_docs_tables_list_exactly_the_registries():
    assert table_names("evaluation-and-export.md", "protocol") == list(PROTOCOLS)
    assert table_names("data.md", "dataset") == list(SOURCES)


def recipe_table_names(path, header: str) -> list[str]:
    """Every recipe named in the first cell of the table whose first column is `header`
    (several per cell, `{rgb,flow}` expanded)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    first = lines.index(next(line for line in lines if line.startswith(f"| {header} |")))
    names = []
    for line in lines[first + 2 :]:
        if not line.startswith("|"):
            break
        for name in re.findall(r"`([^`]+)`", line.split("|")[1]):
            choice = re.search(r"\{([^}]*)\}", name)
            if choice is None:
                names.append(name)
                continue
            names += [name.replace(choice.group(0), one) for one in choice.group(1).split(",")]
    return names


@pytest.mark.parametrize("page", ["docs/training.md", "README.md"])
def test_the_recipe_tables_list_exactly_the_builtin_recipes(page):
    names = recipe_table_names(REPO_ROOT / page, "recipe")
    assert sorted(names) == builtin_recipe_names()
    assert len(names) == len(set(names))
