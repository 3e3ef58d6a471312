"""A start that is kept: a trained TSM fine-tuned by a `finetune-*` recipe at a learning rate
near zero, with the source's segments and view, computes what the source computed: the
temporal shift, which has no weights, comes from the source and not from the recipe file
(actrec.train.start.source_settings). The issue's case: the quickstart's RGB TSM (1/4 of the
channels shifted) under finetune-tsm (1/8) fell from 87.5 % to 12.5 % on new videos at a
learning rate of 1e-12."""

from __future__ import annotations

import json

import pytest
import yaml

NEW_VIDEOS_SEED = 20260036  # not the synthetic set's 0: new videos of the same classes
# The source's network, segments and view (synthetic-tsm), given on the command line.
SOURCE_NETWORK_AND_VIEW = [
    "model.backbone=mobilenet_v2",
    "data.crop_size=48",
    "data.num_segments=4",
    "data.scale_size=48",
]
NEAR_ZERO_RATE = [
    "train.lr=1e-12",
    "train.epochs=1",
    "runtime.steps_per_epoch=2",
    "runtime.validate_every_epochs=0",
]


@pytest.fixture(scope="module")
def new_videos(tmp_path_factory):
    """Videos of the 8 synthetic classes drawn with another seed (4 a class), as a folder of
    class folders; `actrec prepare folder` makes 2 of each class test videos."""
    from actrec.data.synthetic.config import SyntheticConfig
    from actrec.data.synthetic.dataset import generate_synthetic_dataset

    raw = tmp_path_factory.mktemp("new-videos") / "raw"
    generate_synthetic_dataset(raw, SyntheticConfig(videos_per_class=4, seed=NEW_VIDEOS_SEED))
    return raw


def _test_top1(cli_runner, run, prepared, out) -> tuple[float, int]:
    """(top-1, videos) of `actrec eval RUN --data PREPARED` on the test split."""
    result = cli_runner("eval", run, "--data", prepared, "--out", out)
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    return results["top1"], results["num_videos"]


def test_a_finetune_recipe_at_a_rate_near_zero_keeps_the_source_s_accuracy(
    synthetic_tsm_run, new_videos, cli_runner, tmp_path
):
    source = synthetic_tsm_run[1]
    prepared = tmp_path / "prepared"
    result = cli_runner(
        *("prepare", "folder", "--root", new_videos, "--out", prepared, "--flow", "none"),
        *("--workers", "1", "--val-fraction", "0", "--test-fraction", "0.5"),
    )
    assert result.exit_code == 0, result.output
    # the folder's classes are sorted, the source's in the synthetic set's order: eval
    # matches them by name
    source_top1, videos = _test_top1(cli_runner, source, prepared, tmp_path / "source-eval")

    run_dir = tmp_path / "fine-tuned"
    arguments = ["train", "--recipe", "finetune-tsm", "--data", prepared, "--workdir", run_dir]
    arguments += ["--init-from", source]
    for setting in [*SOURCE_NETWORK_AND_VIEW, *NEAR_ZERO_RATE]:
        arguments += ["--set", setting]
    result = cli_runner(*arguments)
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "classifier kept (the same classes, rows reordered by name)" in said
    assert "model.shift_fraction: 0.25 from the source, which trained with it" in said
    assert "data.flip: true (the source trained with false)" in said  # training only
    assert "warning:" not in said
    recipe = yaml.safe_load((run_dir / "recipe.yaml").read_text())
    assert recipe["model"]["shift_fraction"] == 0.25
    start = json.loads((run_dir / "run.json").read_text())["initialised_from"]
    assert start["inherited"] == [
        {"setting": "model.shift_fraction", "value": 0.25, "recipe_value": 0.125}
    ]
    tuned_top1, _ = _test_top1(cli_runner, run_dir, prepared, tmp_path / "tuned-eval")

    print(f"{videos} new videos: source {source_top1:.1%}, fine-tuned {tuned_top1:.1%}")
    # the source recognises the new videos (68.8 % in a development run; 18.8 % with the
    # recipe file's shift of 1/8, the case): the comparison below means something
    assert source_top1 >= 0.4, "the source TSM should recognise new videos of its classes"
    assert abs(tuned_top1 - source_top1) <= 1 / videos + 1e-9, (source_top1, tuned_top1)
