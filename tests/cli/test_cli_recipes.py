"""`actrec recipes`: the table of built-in recipes and `--show` YAML."""

from __future__ import annotations

import subprocess
import sys

from cli_processes import cli_output_with_heavy_modules
from repo_paths import REPO_ROOT
from rich.console import Console

from actrec.config.files import dump_recipe, load_recipe
from actrec.config.inheritance import builtin_recipe_names


def test_recipes_lists_every_builtin(cli_runner):
    result = cli_runner("recipes")
    assert result.exit_code == 0, result.output
    names = builtin_recipe_names()  # the expected set: tests/config/test_config.py
    for name in names:
        assert name in result.output
    assert "kavg K=4" in result.output
    assert "batch 64->512 x2/10ep" in result.output
    assert "lr 0.02 linear@128" in result.output
    assert "lr 0.001 linear@64" in result.output  # TSM's fine-tuning
    assert "TSN, Wang et al. ECCV 2016" in result.output
    assert "MARS: from flow" in result.output  # the distilled synthetic-tsm-mars


def _phrases(recipe) -> list[str]:
    """What the listing must show whole for `recipe`, one phrase per cell line."""
    from actrec.train.schedule import batch_schedule_summary, learning_rate_summary

    train = recipe.train
    return [
        recipe.name,
        f"{recipe.model.architecture}/{recipe.model.backbone}",
        f"batch {batch_schedule_summary(train)}",
        f"lr {learning_rate_summary(train)}",
        f"{train.epochs} epochs",
    ]


def test_recipes_table_fits_a_100_column_terminal_with_every_cell_whole():
    from actrec_cli.recipe_tables import recipes_table

    recipes = [load_recipe(name) for name in builtin_recipe_names()]
    terminal = Console(width=100, force_terminal=True, record=True, color_system=None)
    terminal.print(recipes_table(recipes))
    lines = terminal.export_text().splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 100
    assert "…" not in "\n".join(lines)
    cells = [cell.strip() for line in lines for cell in line.split("│")]
    for recipe in recipes:
        for phrase in _phrases(recipe):
            assert phrase in cells, (phrase, "cut or wrapped")
    # The reference wraps under the name, but every word of it is there.
    words = " ".join(cells).split()
    for recipe in recipes:
        for word in recipe.reference.splitlines()[0].split():
            assert word in words


def test_recipes_piped_is_not_cut_and_keeps_every_word():
    piped = subprocess.run(
        [sys.executable, "-m", "actrec_cli.main", "recipes"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO_ROOT,
    ).stdout
    lines = piped.splitlines()
    assert "\x1b[" not in piped and "…" not in piped  # no colour codes, nothing cut
    cells = [cell.strip() for line in lines for cell in line.split("│")]
    for recipe in (load_recipe(name) for name in builtin_recipe_names()):
        for phrase in _phrases(recipe):
            assert phrase in cells, (phrase, "cut or wrapped")
        assert recipe.reference.splitlines()[0] in cells  # not wrapped either
    kavg = cells.count("kavg K=4")
    assert kavg == 2 and cells.count("allreduce") == len(builtin_recipe_names()) - kavg


def test_recipes_in_clirunner_shows_whole_words(cli_runner):
    result = cli_runner("recipes")
    assert result.exit_code == 0
    cells = [cell.strip() for line in result.output.splitlines() for cell in line.split("│")]
    assert "allreduce" in cells and "kavg K=4" in cells
    assert "two-stream-kavg-adaptive-flow-ucf101" in cells
    assert "TSM's published fine-tuning (Lin et al. ICCV 2019) for any dataset" in cells


def test_show_prints_yaml_that_loads_back(cli_runner, tmp_path):
    result = cli_runner("recipes", "--show", "tsn-flow-ucf101")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("name: tsn-flow-ucf101\n")
    path = tmp_path / "shown.yaml"
    path.write_text(result.output)
    assert load_recipe(path) == load_recipe("tsn-flow-ucf101")


def test_show_a_recipe_file(cli_runner, tmp_path):
    recipe = load_recipe("synthetic-rgb")
    path = tmp_path / "mine.yaml"
    dump_recipe(recipe, path)
    result = cli_runner("recipes", "--show", path)
    assert result.exit_code == 0, result.output
    assert result.output == path.read_text()


def test_show_unknown_name_fails_with_the_list(cli_runner):
    result = cli_runner("recipes", "--show", "tsn-rgb")
    assert result.exit_code == 1
    assert "unknown recipe 'tsn-rgb'" in result.output
    assert "tsn-rgb-ucf101" in result.output


def test_show_invalid_recipe_file_fails(cli_runner, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\ntrain:\n  sync: gossip\n")
    result = cli_runner("recipes", "--show", path)
    assert result.exit_code == 1
    assert "train.sync='gossip'" in result.output


def test_recipes_does_not_import_tensorflow():
    output = cli_output_with_heavy_modules(["recipes"])
    assert "tsn-rgb-ucf101" in output
    assert "HEAVY []" in output
