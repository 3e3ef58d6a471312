"""`actrec recipes`: the table of built-in recipes and `--show` YAML."""

from __future__ import annotations

from conftest import cli_output_with_heavy_modules

from actrec.config import builtin_recipe_names, dump_recipe, load_recipe


def test_recipes_lists_every_builtin(cli_runner):
    result = cli_runner("recipes")
    assert result.exit_code == 0, result.output
    names = builtin_recipe_names()
    assert len(names) == 10
    for name in names:
        assert name in result.output
    assert "kavg K=4" in result.output
    assert "64->512 x2/10ep" in result.output
    assert "0.02 linear@128" in result.output
    assert "TSN, Wang et al. ECCV 2016" in result.output


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
