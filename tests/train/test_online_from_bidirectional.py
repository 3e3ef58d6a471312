"""The road from a bidirectional TSM to a streaming model: `--init-from` it with
finetune-tsm-online, and the run it makes exports frame by frame (`--streaming`). The shift
holds no weights: every weight carries over, which a note (not a warning) says."""

from __future__ import annotations

import json

import pytest
import yaml
from tiny_recipe import TINY_RUN_SETTINGS


@pytest.fixture(scope="module")
def tiny_bidirectional(tiny_synthetic_prepared, tmp_path_factory):
    """synthetic-tsm (bidirectional shift) trained for one step as the tiny runs are."""
    from actrec.config.files import load_recipe
    from actrec.config.overrides import apply_overrides
    from actrec.train.run import train

    run = tmp_path_factory.mktemp("bidirectional") / "run"
    train(
        apply_overrides(load_recipe("synthetic-tsm"), TINY_RUN_SETTINGS),
        tiny_synthetic_prepared,
        run,
    )
    return run


def test_finetune_tsm_online_makes_a_bidirectional_tsm_stream(
    tiny_bidirectional, tiny_synthetic_prepared, cli_runner, tmp_path
):
    run = tmp_path / "online"
    arguments = ["train", "--recipe", "finetune-tsm-online", "--data", tiny_synthetic_prepared]
    arguments += ["--workdir", run, "--init-from", tiny_bidirectional]
    for setting in ("data.crop_size=32", "data.num_segments=2", "data.scale_size=32"):
        arguments += ["--set", setting]
    for setting in ("train.epochs=1", "runtime.steps_per_epoch=1"):
        arguments += ["--set", setting]
    result = cli_runner(*arguments, "--set", "runtime.validate_every_epochs=0")
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert (
        "model.shift_direction: online (the source trained with bidirectional): the shift "
        "becomes online" in said
    )
    assert "every weight carries over: fine-tune to recover" in said
    assert "warning: model.shift_direction" not in said
    recipe = yaml.safe_load((run / "recipe.yaml").read_text())
    assert recipe["model"]["shift_direction"] == "online"
    assert recipe["model"]["shift_fraction"] == 0.25  # the source's, inherited
    start = json.loads((run / "run.json").read_text())["initialised_from"]
    (difference,) = [d for d in start["differences"] if d["setting"] == "model.shift_direction"]
    assert (difference["value"], difference["source_value"]) == ("online", "bidirectional")
    assert difference["warning"] is None and "becomes online" in difference["note"]

    # the bidirectional source itself is refused by --streaming; the run made online exports
    refused = cli_runner("export", tiny_bidirectional, "--out", tmp_path / "no", "--streaming")
    assert refused.exit_code != 0 and not (tmp_path / "no").exists()
    exported = cli_runner("export", run, "--out", tmp_path / "stream", "--streaming")
    assert exported.exit_code == 0, exported.output
    metadata = json.loads((tmp_path / "stream" / "actrec.json").read_text())
    streaming = metadata["streaming"]
    assert streaming["num_segments"] == 2 and len(streaming["states"]) > 0
