"""The TSM Something-Something V2 and Jester recipes: they load and validate, never flip
(direction-sensitive labels), carry TSM's command, and `recipes --sources` lists them."""

from __future__ import annotations

import pytest

from actrec.config.files import load_recipe
from actrec.config.recipe_sources import source_table, table_problems
from actrec.config.validate import validate_recipe

RECIPES = ("tsm-something-something-v2", "tsm-jester")


@pytest.mark.parametrize("name", RECIPES)
def test_the_recipe_validates_never_flips_and_matches_its_table(name):
    recipe = load_recipe(name)
    validate_recipe(recipe)
    assert recipe.data.flip is False
    assert (recipe.data.num_segments, recipe.model.architecture) == (8, "tsm")
    assert (recipe.train.lr, recipe.train.batch_size, recipe.train.lr_reference_batch) == (
        0.01,
        64,
        64,
    )
    assert (recipe.train.epochs, recipe.train.decay_epochs) == (50, (20, 40))
    assert (recipe.model.dropout, recipe.model.partial_bn) == (0.5, False)
    assert table_problems(name) == []


def test_the_flip_row_says_why_actrec_does_not_flip_as_mmaction2_does():
    row = source_table("tsm-something-something-v2").row("data.flip")
    assert row.kind == "deviation" and "main.py:72" in row.source
    assert "mm flips SSv2" in row.deviation


def test_sources_cli_prints_the_something_command(cli_runner):
    result = cli_runner("recipes", "--show", "tsm-something-something-v2", "--sources")
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if line.startswith("│ train.lr "))
    assert "│ 0.01 " in row and "--lr 0.01" in row
