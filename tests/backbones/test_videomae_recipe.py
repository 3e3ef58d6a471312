"""VideoMAE as a recipe's network (model.architecture=videomae, model.backbone a size):
the recipe's checks, and the tiny test size trained through `actrec train` on the tiny
synthetic set, evaluated, exported and predicted from the export without trusting it."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from tiny_recipe import TINY_RUN_SETTINGS

from actrec.config.files import load_recipe
from actrec.config.overrides import apply_overrides
from actrec.config.validate import validate_recipe
from actrec.errors import ConfigError

VIDEOMAE_SETTINGS = [
    *(s for s in TINY_RUN_SETTINGS if not s.startswith(("model.", "data.num_segments"))),
    "model.architecture=videomae",
    "model.backbone=test_videomae",
    "model.weights=none",
    "model.dropout=0.0",
    "model.drop_path_rate=0.1",
    "data.num_segments=4",
    "runtime.steps_per_epoch=2",
]
"""test_videomae at 32 px, 4 frames (2 tubelets x 2 x 2 patches), two steps."""


def _recipe(*extra: str):
    return apply_overrides(load_recipe("synthetic-rgb"), [*VIDEOMAE_SETTINGS, *extra])


def test_a_recipe_builds_videomae_by_its_architecture_and_size():
    recipe = _recipe()
    validate_recipe(recipe)
    assert (recipe.model.architecture, recipe.model.backbone) == ("videomae", "test_videomae")


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (["model.backbone=resnet50"], "model.backbone='resnet50' is not valid; model.architecture"
         "=videomae is built in one of its sizes: videomae_s, videomae_b, videomae_l, "
         "videomae_h, test_videomae"),
        (["model.architecture=tsn"], "model.backbone='test_videomae' is not valid; it is a clip "
         "network, not a per-frame backbone: use model.architecture=videomae"),
        (["data.num_segments=3"], "data.num_segments=3 is not valid; test_videomae takes clips "
         "whose frames are a multiple of 2; got 3"),
        (["data.crop_size=40"], "data.crop_size=40 is not valid; test_videomae takes clips "
         "whose pixels high are a multiple of 16; got 40"),
        (["model.weights=imagenet"], "model.weights='imagenet' is not valid; a videomae "
         "network starts from none (random) or run:PATH"),
        (["data.modality=flow", "data.new_length=2"], "data.modality='flow' is not valid; a "
         "videomae network takes RGB clips"),
        (["model.architecture=tsn", "model.backbone=test_mobilenet_v2"], "model.drop_path_rate"
         "=0.1 is not valid; it is a clip network's setting (videomae, movinet): use 0 with "
         "tsn"),
    ],
)  # fmt: skip
def test_a_setting_videomae_cannot_take_is_refused_by_name(settings, message):
    with pytest.raises(ConfigError) as refused:
        validate_recipe(_recipe(*settings))
    assert message in str(refused.value)


@pytest.fixture(scope="module")
def videomae_run(tiny_synthetic_prepared, tmp_path_factory):
    """(the run trained by `actrec train`, its SavedModel export, the CLI's invoke)."""
    from actrec_cli.main import main
    from click.testing import CliRunner

    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(main, [str(a) for a in args], catch_exceptions=False)

    folder = tmp_path_factory.mktemp("videomae-recipe")
    sets = [part for setting in VIDEOMAE_SETTINGS for part in ("--set", setting)]
    trained = invoke(
        "train", "--recipe", "synthetic-rgb", "--data", tiny_synthetic_prepared,
        "--workdir", folder / "run", *sets,
    )  # fmt: skip
    assert trained.exit_code == 0, trained.output
    exported = invoke("export", folder / "run", "--out", folder / "export")
    assert exported.exit_code == 0, exported.output
    return folder / "run", folder / "export", invoke, exported.output


def test_the_tiny_videomae_trains_and_evaluates(videomae_run):
    run, _, invoke, _ = videomae_run
    lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    losses = [line["loss"] for line in lines if "loss" in line]
    assert len(losses) >= 1 and all(np.isfinite(losses))
    evaluated = invoke("eval", run, "--protocol", "tsm-8x1")  # 8 frames: a longer table
    assert evaluated.exit_code == 0, evaluated.output
    results = json.loads((run / "eval" / "test-tsm-8x1" / "results.json").read_text())
    assert (results["num_videos"], results["num_segments"]) == (8, 8)
    assert 0 <= results["top1"] <= results["top5"] <= 1
    refused = invoke("eval", run, "--segments", "5")
    assert refused.exit_code != 0
    assert "test_videomae takes clips whose frames are a multiple of 2; got 5" in refused.output


def test_a_run_starts_from_the_videomae_run_at_another_frame_count(
    videomae_run, tiny_synthetic_prepared, tmp_path
):
    """`train --init-from`: every weight but the classifier's is copied by layer (the
    position table has none, so 2 frames take a 4-frame run's weights); the same classes
    keep the classifier."""
    run, _, invoke, _ = videomae_run
    sets = [part for setting in VIDEOMAE_SETTINGS for part in ("--set", setting)]
    started = invoke(
        "train", "--recipe", "synthetic-rgb", "--data", tiny_synthetic_prepared,
        "--workdir", tmp_path / "run", *sets, "--set", "data.num_segments=2",
        "--set", "runtime.steps_per_epoch=1", "--init-from", run,
    )  # fmt: skip
    assert started.exit_code == 0, started.output
    said = " ".join(started.output.split())
    # the patch embedding's 2, 15 a block (2 norms, query / key / value with no key bias,
    # projection, MLP) x 2, fc_norm's 2
    assert "loaded 34 backbone weight tensors" in said, said
    assert "classifier kept (the same classes)" in said
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["initialised_from"]["backbone"] == "test_videomae"


def test_the_export_predicts_without_trusting_it_as_tensorflow_loads_it(
    videomae_run, tiny_synthetic_prepared
):
    from actrec.predict.video_files import predict_videos

    _, export, invoke, output = videomae_run
    assert "the model matches within 0.0e+00" in output
    raw = tiny_synthetic_prepared.parent / "raw"
    videos = sorted(raw.glob("*/*.avi"))[:2]
    rebuilt = predict_videos(videos, export, top_k=3)  # actrec's own graph, variables as data
    loaded = predict_videos(videos, export, top_k=3, trust_model=True)  # TensorFlow's loader
    for ours, theirs in zip(rebuilt, loaded, strict=True):
        assert ours.ok and theirs.ok, (ours.error, theirs.error)
        np.testing.assert_allclose(ours.probabilities, theirs.probabilities, atol=1e-6)
        assert abs(sum(ours.probabilities) - 1) < 1e-5
    timeline = invoke("predict", videos[0], "--model", export, "--timeline", "--window", "0.3")
    assert timeline.exit_code == 0, timeline.output
    assert "0.00" in timeline.output and "probability" in timeline.output


@pytest.mark.parametrize(
    ("options", "tolerance"),
    [(["--format", "onnx"], 1e-5), (["--format", "tflite", "--quantize", "float16"], 2e-2)],
    ids=["onnx", "tflite-float16"],
)
def test_the_onnx_and_tflite_exports_predict_as_the_savedmodel(
    videomae_run, tiny_synthetic_prepared, tmp_path, options, tolerance
):
    """Each export reloads within its tolerance of the network (float16 weights: a few
    thousandths), and `predict` runs it, untrusted, to the SavedModel's probabilities."""
    from actrec.predict.video_files import predict_videos

    run, savedmodel, invoke, _ = videomae_run
    exported = invoke("export", run, "--out", tmp_path / "export", *options)
    assert exported.exit_code == 0, exported.output
    said = " ".join(exported.output.split())
    marker = "matches within " if "matches within " in said else "outputs by up to "
    assert float(said.split(marker)[1].split()[0]) <= tolerance, said
    videos = sorted((tiny_synthetic_prepared.parent / "raw").glob("*/*.avi"))[:2]
    ours = predict_videos(videos, tmp_path / "export", top_k=3)
    reference = predict_videos(videos, savedmodel, top_k=3)
    for got, expected in zip(ours, reference, strict=True):
        assert got.ok, got.error
        np.testing.assert_allclose(got.probabilities, expected.probabilities, atol=tolerance)


def test_an_int8_export_is_kept_or_refused_by_the_accuracy_gate_with_both_figures(
    videomae_run, tmp_path
):
    """The gate measures the float and the int8 network on the run's test clips and keeps
    the export only when the drop is within --max-drop (the tiny run's 8 clips: passed)."""
    run, _, invoke, _ = videomae_run
    out = tmp_path / "int8"
    exported = invoke("export", run, "--out", out, "--format", "tflite", "--quantize", "int8")
    said = " ".join(exported.output.split())
    gate = re.search(r"top-1 float32 (\d+\.\d)%, int8 (\d+\.\d)%, .* on (\d+) test clips", said)
    assert gate, said
    float_top1, int8_top1, clips = float(gate[1]), float(gate[2]), int(gate[3])
    assert clips == 8 and 0 <= float_top1 <= 100 and 0 <= int8_top1 <= 100
    passed = "--max-drop 2: passed" in said
    assert passed == (exported.exit_code == 0) == (float_top1 - int8_top1 <= 2), said
    if passed:
        assert (out / "model.tflite").is_file()
