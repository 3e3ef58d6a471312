"""Fidelity tables (actrec/recipes/sources/*.yaml): every built-in recipe, every field, its
value and its source; a recipe cannot drift from its table silently."""

from __future__ import annotations

import dataclasses
import re

import pytest

from actrec.config.files import load_recipe
from actrec.config.inheritance import builtin_base_names, builtin_recipe_names
from actrec.config.recipe_sources import (
    recipe_fields,
    recipe_set_fields,
    source_table,
    table_problems,
)
from actrec.errors import ConfigError

PUBLISHED = ("tsn-rgb-ucf101", "tsn-flow-ucf101", "tsn-rgb-hmdb51", "tsn-flow-hmdb51")
FINE_TUNING = ("tsm-ucf101-from-kinetics400", "tsm-hmdb51-from-kinetics400")
CITATION = re.compile(r"\w+ [\w./-]+:\d+")  # "tsn S:16", "tsm main.py:76-79"


@pytest.mark.parametrize("name", builtin_recipe_names() + builtin_base_names())
def test_every_field_a_builtin_recipe_sets_has_its_row_and_the_recipes_value(name):
    assert table_problems(name) == []
    table = source_table(name)
    assert {row.field for row in table.rows} == set(recipe_set_fields(name))
    assert set(recipe_set_fields(name)) <= set(recipe_fields(load_recipe(name)))


def test_a_row_for_a_field_the_recipe_leaves_at_its_default_is_reported(monkeypatch):
    import actrec.config.recipe_sources as sources

    stated = dict(recipe_set_fields("tsn-rgb-hmdb51"))
    del stated["train.epochs"]
    monkeypatch.setattr(sources, "recipe_set_fields", lambda name: stated)
    assert table_problems("tsn-rgb-hmdb51") == [
        "train.epochs: a row for a field the recipe does not set"
    ]


def test_a_recipe_that_drifts_from_its_table_is_reported(monkeypatch):
    import actrec.config.recipe_sources as sources

    drifted = load_recipe("tsn-flow-ucf101")
    drifted = dataclasses.replace(
        drifted, train=dataclasses.replace(drifted.train, lr=0.002, first_conv_lr_mult=1.0)
    )
    monkeypatch.setattr(sources, "load_recipe", lambda name: drifted)
    problems = table_problems("tsn-flow-ucf101")
    assert "train.lr: the recipe has 0.002, the table 0.005" in problems
    assert "train.first_conv_lr_mult: the recipe has 1.0, the table 5.0" in problems
    assert len(problems) == 2


@pytest.mark.parametrize("name", [*PUBLISHED, "tsm-kinetics400", *FINE_TUNING])
def test_published_recipes_cite_a_file_and_line_for_every_optimisation_field(name):
    table = source_table(name)
    citation = CITATION
    for field in (
        "train.lr",
        "train.batch_size",
        "train.momentum",
        "train.weight_decay",
        "train.weight_decay_mode",
        "train.bias_lr_mult",
        "train.first_conv_lr_mult",
        "train.classifier_lr_mult",
        "train.clip_norm",
        "train.decay_epochs",
        "data.scales",
        "data.more_fix_crop",
        "model.dropout",
    ):
        row = table.row(field)
        assert row.kind in ("source", "deviation"), field
        assert citation.search(row.source), (field, row.source)


@pytest.mark.parametrize("name", FINE_TUNING)
def test_tsm_finetuning_cites_a_source_line_for_every_field_it_sets(name):
    """TSM's fine-tuning from Kinetics: every field the recipe (or a recipe it extends) sets
    comes from the official command or code, with its file and line; none is actrec's."""
    table = source_table(name)
    for field in recipe_set_fields(name):
        row = table.row(field)
        assert row is not None, field
        assert row.kind in ("source", "deviation"), (field, row.reason)
        assert CITATION.search(row.source), (field, row.source)
    assert "scripts/finetune_tsm_ucf101_rgb_8f.sh" in table.citations["F"]
    assert "F:6" in table.row("model.weights").source  # --tune_from
    assert "main.py:63" in table.row("train.classifier_lr_mult").source  # fc_lr5
    assert "opts.py:41" in table.row("train.weight_decay").source  # no --wd: the default


def test_sources_cli_prints_the_finetuning_command_for_every_field(cli_runner):
    result = cli_runner("recipes", "--show", "tsm-ucf101-from-kinetics400", "--sources")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    for field in recipe_set_fields("tsm-ucf101-from-kinetics400"):
        row = next(line for line in lines if line.startswith(f"│ {field} "))
        assert "│ · │" not in row and "│ - │" not in row, row
    row = next(line for line in lines if line.startswith("│ train.lr "))
    assert "│ 0.001 " in row and "F:3" in row
    assert "scripts/finetune_tsm_ucf101_rgb_8f.sh" in result.output


def test_deviations_are_marked_as_such():
    table = source_table("tsn-rgb-ucf101")
    assert table.row("model.backbone").kind == "deviation"
    assert "BN-Inception" in table.row("model.backbone").source
    assert table.row("train.clip_norm").kind == "source"  # 40, the Caffe RGB solver's
    assert table.row("runtime.validate_every_epochs").kind == "source"
    assert source_table("synthetic-tsm").row("model.backbone").kind == "actrec"


def test_sources_cli_prints_every_field_with_its_source_in_110_columns(cli_runner):
    result = cli_runner("recipes", "--show", "tsn-flow-ucf101", "--sources")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 110
    for field in recipe_fields(load_recipe("tsn-flow-ucf101")):
        assert any(line.startswith(f"│ {field} ") for line in lines), field
    row = next(line for line in lines if line.startswith("│ train.first_conv_lr_mult "))
    assert "│ 5 " in row and "U:53" in row
    assert any(line.startswith("│ model.backbone ") and "≠" in line for line in lines)
    assert "yjxiong/temporal-segment-networks@2c5e5e7" in result.output


def test_sources_need_a_builtin_recipe(cli_runner, tmp_path):
    result = cli_runner("recipes", "--sources")
    assert result.exit_code == 1 and "--show NAME --sources" in result.output
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\n")
    result = cli_runner("recipes", "--show", path, "--sources")
    assert result.exit_code == 1 and "not a built-in recipe" in result.output
    with pytest.raises(ConfigError, match="no source table"):
        source_table("no-such-recipe")


@pytest.mark.parametrize(
    "name", ["videomae-b-ucf101-from-kinetics400", "videomae-b-hmdb51-from-kinetics400"]
)
def test_videomae_finetuning_cites_the_authors_code_for_every_field(name):
    """VideoMAE's fine-tuning: every field the recipe sets comes from MCG-NJU/VideoMAE's
    UCF101 script, run_class_finetuning.py's defaults or the paper, with file and line."""
    table = source_table(name)
    for field in recipe_set_fields(name):
        row = table.row(field)
        assert row.kind in ("source", "deviation"), (field, row.reason)
        assert CITATION.search(row.source), (field, row.source)
    assert "U:30" in table.row("train.layer_decay").source  # --layer_decay 0.7
    assert "R:406" in table.row("train.lr_reference_batch").source  # lr x batch / 256
    assert (table.row("train.mixup").value, table.row("train.cutmix").value) == (0.8, 1.0)
    assert table.row("train.warmup_epochs").kind == "deviation"  # from a tenth, not from 0
