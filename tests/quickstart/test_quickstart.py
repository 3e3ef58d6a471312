"""`actrec quickstart` end to end, in its reduced size (about a minute on 2 cores)."""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pytest

from actrec.data.synthetic.config import SYNTHETIC_CLASSES
from actrec.evaluation.scores import load_video_scores
from actrec.quickstart.stages import SIZES


def test_the_cli_offers_the_library_sizes():
    from actrec_cli.quickstart import SIZE_NAMES

    assert tuple(SIZES) == SIZE_NAMES


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
def test_the_reduced_quickstart_makes_every_artefact_and_reaches_its_accuracy(cli_runner, tmp_path):
    workdir = tmp_path / "quickstart"
    result = cli_runner("quickstart", "--size", "small", "--workdir", workdir)
    assert result.exit_code == 0, result.output
    for stage in range(1, 9):
        assert f"[{stage}/8]" in result.output
    for label in ("RGB TSN", "RGB TSM (distilled)", "flow TSN", "TSM + flow (fused)"):
        assert label in result.output
    # the flow TSN trains first, and the RGB TSM learns from it (issue 39)
    assert result.output.index("train the flow TSN") < result.output.index("train the RGB TSM")
    tsm_record = json.loads((workdir / "runs" / "tsm" / "run.json").read_text())
    teacher = tsm_record["distilled_from"]
    assert teacher["path"] == str((workdir / "runs" / "flow").resolve())
    assert teacher["modality"] == "flow"

    fused_dir = workdir / "runs" / "tsm" / "eval" / "fused-tsm-flow"
    fused = json.loads((fused_dir / "results.json").read_text())
    scores = load_video_scores(fused_dir)
    recomputed = float(np.mean(scores.predictions == scores.labels))
    assert fused["top1"] == pytest.approx(recomputed)
    assert recomputed >= SIZES["small"].expected_fused_accuracy
    printed = re.search(r"fused accuracy ([0-9.]+) %", result.output)
    assert printed and float(printed.group(1)) == pytest.approx(100 * recomputed, abs=0.05)
    assert fused["average"] == "logits" and [s["name"] for s in fused["streams"]] == ["tsm", "flow"]
    for stream, modality in (("rgb", "rgb"), ("tsm", "rgb"), ("flow", "flow")):
        results = json.loads(
            (workdir / "runs" / stream / "eval" / "test-centre" / "results.json").read_text()
        )
        assert results["modality"] == modality
        if stream in ("tsm", "flow"):
            assert fused["top1"] >= results["top1"] - 0.01  # no worse than either stream

    export = workdir / "export"
    assert (export / "saved_model.pb").is_file()
    metadata = json.loads((export / "actrec.json").read_text())
    assert tuple(metadata["classes"]) == SYNTHETIC_CLASSES
    assert (export / "MODEL_CARD.md").is_file()
    video = next((workdir / "predict").glob("new_*.avi"))
    assert re.search(
        rf"prediction for .*{video.name}: \w+ \([0-9.]+ %\), true class", result.output
    )

    # Run again: the finished stages are kept: the runs are not retrained, nor evaluated or
    # exported again.
    weights = {
        s: _digest(workdir / "runs" / s / "final.weights.h5") for s in ("rgb", "tsm", "flow")
    }
    model_digest = _digest(export / "saved_model.pb")
    again = cli_runner("quickstart", "--size", "small", "--workdir", workdir)
    assert again.exit_code == 0, again.output
    assert again.output.count("is already trained; kept") == 3
    assert again.output.count("is already evaluated; kept") == 3
    assert "is already exported from these runs; kept" in again.output
    assert weights == {s: _digest(workdir / "runs" / s / "final.weights.h5") for s in weights}
    assert _digest(export / "saved_model.pb") == model_digest
    assert f"fused accuracy {printed.group(1)} %" in again.output
