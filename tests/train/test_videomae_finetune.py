"""VideoMAE's fine-tuning keeps its start (`model.weights: run:PATH` of a VideoMAE run): the
start carries every weight but a new classifier, and `videomae-folder` (AdamW, layer-wise
rate decay, mixup / CutMix, label smoothing, drop path, remat, on the test size) at a rate
near zero predicts what its start predicted."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from kept_start import centre_scores, trained_source

from actrec.config.files import load_recipe
from actrec.config.overrides import apply_overrides
from actrec.evaluation.evaluate import evaluate_run
from actrec.evaluation.protocols import resolve_protocol
from actrec.export.writer import export_runs
from actrec.models.factory import model_builder
from actrec.runs.record import RunRecord
from actrec.runs.trained import build_trained_model, load_trained_run
from actrec.train.run import train
from actrec.train.start.starting_point import load_starting_weights, starting_point

TEST_SIZE = [
    "model.backbone=test_videomae",
    "data.num_segments=4",
    "data.frame_interval=2",
    "data.crop_size=32",
    "data.scale_size=32",
    "data.flip=false",  # the synthetic classes have directions: a mirror changes them
    "train.batch_size=8",
    "train.epochs=2",
    "train.warmup_epochs=1",
    "runtime.steps_per_epoch=2",
    "runtime.validate_every_epochs=0",
    "runtime.checkpoint_every_steps=0",
]
"""videomae-folder on the test size: 4 frames every 2nd at 32 px, batch 8, 4 steps, with the
recipe's AdamW, layer decay, mixup / CutMix, label smoothing, drop path and remat."""
NEAR_ZERO_RATE = "train.lr=1e-12"


@pytest.fixture(scope="module")
def videomae_source(tiny_synthetic_prepared, tmp_path_factory):
    """(a tiny VideoMAE run trained 4 steps from scratch by videomae-folder on the tiny
    synthetic set, its test scores)."""
    return trained_source(
        "videomae-folder", TEST_SIZE, tiny_synthetic_prepared, tmp_path_factory, "videomae-source"
    )


def test_videomae_folder_at_a_rate_near_zero_keeps_its_start_s_predictions(
    videomae_source, tiny_synthetic_prepared, tmp_path
):
    """Fine-tuned by the recipe (its mixup, decay and all) at lr 1e-12, the run predicts what
    its start predicted; the same steps from scratch do not."""
    source, source_scores = videomae_source
    scores = {}
    for name, start in (
        ("scratch", "model.weights=none"),
        ("tuned", f"model.weights=run:{source}"),
    ):
        recipe = apply_overrides(
            load_recipe("videomae-folder"), [*TEST_SIZE, NEAR_ZERO_RATE, start]
        )
        train(recipe, tiny_synthetic_prepared, tmp_path / name)
        scores[name] = centre_scores(tmp_path / name)
    np.testing.assert_allclose(scores["tuned"], source_scores, atol=1e-5)
    assert np.abs(scores["scratch"] - source_scores).max() > 1e-2
    start = json.loads((tmp_path / "tuned" / "run.json").read_text())["initialised_from"]
    assert (start["architecture"], start["backbone"]) == ("videomae", "test_videomae")
    assert start["keeps_classifier"] is True


def test_a_videomae_start_carries_every_weight_but_a_new_classifier(videomae_source):
    """From the 8-class source onto 4 classes: every weight of the network is the source's
    but the classifier, which is new (the weights hold no frame count: 8 frames here)."""
    source = load_trained_run(videomae_source[0])
    expected = build_trained_model(source)
    classes = ("MoveLeft", "MoveRight", "ZoomIn", "ZoomOut")
    recipe = apply_overrides(
        load_recipe("videomae-folder"),
        [*TEST_SIZE, "data.num_segments=8", f"model.weights=run:{videomae_source[0]}"],
    )
    start = starting_point(recipe, classes, RunRecord())
    model = model_builder(recipe.model, recipe.data, len(classes))()
    lines = load_starting_weights(model, start, recipe, classes)
    weights = [w for w in expected.weights if not w.path.startswith("classifier")]
    assert lines[1] == f"loaded {len(weights)} backbone weight tensors"
    assert lines[2] == "classifier new (other classes): randomly initialised"
    mine = {w.path: np.asarray(w) for w in model.weights}
    for weight in weights:
        np.testing.assert_array_equal(mine[weight.path], np.asarray(weight), err_msg=weight.path)


def test_a_converted_videomae_fine_tunes_from_its_start_where_scratch_does_not(
    tiny_synthetic_prepared, cli_runner, tmp_path
):
    """transformers' own VideoMAE (tiny, random, the data's classes as its labels: the
    classifier is kept), saved as a Hugging Face folder and converted, is the start of
    videomae-folder at a rate near zero: the fine-tuned run predicts what the converted one
    predicts, with its width and depth (model.network) inherited from it; the same network
    from scratch does not."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from videomae_reference import reference

    classes = json.loads((tiny_synthetic_prepared / "manifest.json").read_text())["classes"]
    model = reference(num_frames=4, image_size=32, num_labels=len(classes))
    model.config.id2label = dict(enumerate(classes))
    model.save_pretrained(tmp_path / "videomae-tiny")
    source = tmp_path / "converted"
    converted = cli_runner("pretrained", "convert", tmp_path / "videomae-tiny", "--out", source)
    assert converted.exit_code == 0, converted.output
    network = load_recipe(source / "recipe.yaml").model.network
    assert network  # the file's own width and depth, not videomae_s's
    out = tmp_path / "converted-eval"
    evaluate_run(source, resolve_protocol("centre"), out_dir=out, data_dir=tiny_synthetic_prepared)
    source_scores = np.load(out / "scores.npz")["scores"]
    size = [s for s in TEST_SIZE if not s.startswith(("model.backbone=", "data.frame_interval="))]
    size.append("data.frame_interval=4")  # the converted recipe's view of the clip
    scores = {}
    for name, start in (
        ("tuned", [f"model.weights=run:{source}"]),
        ("scratch", ["model.weights=none", "model.backbone=videomae_s"]),
    ):
        recipe = apply_overrides(load_recipe("videomae-folder"), [*size, NEAR_ZERO_RATE, *start])
        if name == "scratch":
            recipe = dataclasses.replace(
                recipe, model=dataclasses.replace(recipe.model, network=network)
            )
        train(recipe, tiny_synthetic_prepared, tmp_path / name)
        scores[name] = centre_scores(tmp_path / name)
    np.testing.assert_allclose(scores["tuned"], source_scores, atol=1e-5)
    assert np.abs(scores["scratch"] - source_scores).max() > 1e-2
    record = json.loads((tmp_path / "tuned" / "run.json").read_text())["initialised_from"]
    assert record["keeps_classifier"] is True
    assert record["weights_license"].startswith("CC-BY-NC-4.0")
    # an export of it names the license too, and a start from that export keeps it
    export_runs([tmp_path / "tuned"], tmp_path / "export")
    stream = json.loads((tmp_path / "export" / "actrec.json").read_text())["streams"][0]
    assert stream["weights_license"] == record["weights_license"]
    again = apply_overrides(
        load_recipe("videomae-folder"), [f"model.weights=run:{tmp_path / 'export'}"]
    )
    start = starting_point(again, tuple(classes), RunRecord())
    assert start.kind == "export" and start.weights_license == record["weights_license"]
