"""`actrec predict`: video files in, the export's top-k classes out, bad files reported."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from actrec.data.format import records
from actrec.data.format.manifest import read_manifest
from actrec.data.synthetic.config import SYNTHETIC_CLASSES, SyntheticConfig
from actrec.data.synthetic.render import render_clip
from actrec.data.synthetic.video_writer import write_video
from actrec.errors import ConfigError
from actrec.export.writer import export_runs
from actrec.predict.video_files import predict_videos, record_inputs


def _test_videos(prepared: Path) -> dict[str, Path]:
    """video id -> source file of the prepared test split."""
    manifest = read_manifest(prepared)
    return {
        video["id"]: Path(video["path"])
        for video in manifest["videos"]
        if video["split"] == "test" and video["status"] == "ok"
    }


@pytest.mark.parametrize("export", ["two-stream", "rgb"])
def test_predict_prepares_a_video_exactly_as_training_data(tiny_runs, tiny_exports, export):
    """A source video through `predict` gives what the export gives on its prepared record
    (which test_export shows is the evaluation pipeline's score)."""
    import tensorflow as tf

    prepared = tiny_runs["prepared"]
    sources = _test_videos(prepared)
    signature = tf.saved_model.load(str(tiny_exports[export])).signatures["serving_default"]
    expected = {}
    for video_id, video_records in list(records.iter_split_videos(prepared, "test"))[:3]:
        inputs = record_inputs(video_records, with_flow=export == "two-stream")
        inputs = {name: value[None] for name, value in inputs.items()}  # a batch of 1
        expected[str(sources[video_id])] = signature(**inputs)["probabilities"].numpy()[0]

    predictions = predict_videos(list(expected), tiny_exports[export], top_k=3)
    assert len(predictions) == 3
    for prediction in predictions:
        assert prediction.ok, prediction.error
        np.testing.assert_array_equal(prediction.probabilities, expected[prediction.video])
        order = np.argsort(-expected[prediction.video])[:3]
        assert [name for name, _ in prediction.top_k] == [SYNTHETIC_CLASSES[i] for i in order]


@pytest.mark.slow
def test_predict_computes_the_flow_method_the_data_was_prepared_with(tiny_runs, tmp_path):
    """Data prepared with --flow dis-medium: the export of a flow run on it records the
    method, and predict computes that flow (the record's, exactly), not DIS fast's. The
    tiny flow run's weights stand in for a run trained on that data: predict's preparation
    does not depend on them."""
    from actrec.data.prepare.dataset import prepare_dataset
    from actrec.data.prepare.encode_video import PrepareSettings
    from actrec.data.sources import list_videos
    from actrec.predict.video_files import ExportedModel

    medium = tmp_path / "prepared-dis-medium"
    settings = PrepareSettings(frame_size="original", flow="dis-medium")
    prepare_dataset(list_videos("synthetic", tiny_runs["raw"]), medium, settings, workers=1)
    run = tmp_path / "flow-run"
    shutil.copytree(tiny_runs["flow"], run, ignore=shutil.ignore_patterns("checkpoints"))
    record = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**record, "data": str(medium)}))
    export_runs([run], tmp_path / "export")

    metadata = json.loads((tmp_path / "export" / "actrec.json").read_text())
    assert metadata["preparation"]["flow"] == "dis-medium"
    model = ExportedModel(tmp_path / "export")
    assert model.settings.flow == "dis-medium"
    sources = _test_videos(medium)
    for prepared in (medium, tiny_runs["prepared"]):  # DIS medium, then DIS fast
        video_id, video_records = next(records.iter_split_videos(prepared, "test"))
        flow = model.video_inputs(sources[video_id])["flow"][0]  # [F-1, H, W, 2]
        stored = record_inputs(video_records, with_rgb=False)["flow"]
        assert np.array_equal(flow, stored) is (prepared == medium), prepared


def test_unreadable_videos_are_reported_and_the_others_predicted(
    tiny_runs, tiny_exports, tmp_path, cli_runner
):
    good = sorted(_test_videos(tiny_runs["prepared"]).values())[:2]
    corrupt = tmp_path / "corrupt.avi"
    corrupt.write_bytes(np.random.default_rng(0).bytes(20_000))
    missing = tmp_path / "missing.avi"
    videos = [good[0], corrupt, good[1], missing]

    result = cli_runner("predict", *videos, "--model", tiny_exports["two-stream"], "--top-k", 3)
    assert result.exit_code == 1
    assert f"cannot read {corrupt}:" in result.stderr
    assert f"cannot read {missing}: no such file" in result.stderr
    assert result.stdout.count("probability") == 2  # one table per readable video
    assert str(good[0]) in result.stdout and str(good[1]) in result.stdout

    result = cli_runner("predict", *videos, "--model", tiny_exports["two-stream"], "--json")
    assert result.exit_code == 1
    listed = json.loads(result.stdout)  # stdout holds the JSON document only
    assert [entry["video"] for entry in listed] == [str(video) for video in videos]
    assert [entry["error"] is None for entry in listed] == [True, False, True, False]
    for entry in (listed[0], listed[2]):
        assert len(entry["top_k"]) == 5
        assert {item["class"] for item in entry["top_k"]} <= set(SYNTHETIC_CLASSES)
        probabilities = [item["probability"] for item in entry["top_k"]]
        assert probabilities == sorted(probabilities, reverse=True) and sum(probabilities) <= 1
    assert listed[1]["top_k"] == [] and "OpenCV cannot open" in listed[1]["error"]


def test_predict_needs_an_actrec_savedmodel(tiny_runs, tmp_path, cli_runner):
    result = cli_runner("predict", tiny_runs["raw"], "--model", tmp_path)
    assert (
        result.exit_code == 1
        and "is an empty folder, not an export; --model takes the --out folder" in result.output
    )
    export_runs([tiny_runs["rgb"]], tmp_path / "keras", model_format="keras")
    with pytest.raises(ConfigError, match="Keras export"):
        predict_videos([tiny_runs["raw"]], tmp_path / "keras")


def _new_videos(folder: Path, per_class: int) -> dict[Path, str]:
    """Fresh clips of every class, from a seed the training set did not use."""
    config = SyntheticConfig(seed=2024)
    folder.mkdir(parents=True)
    videos = {}
    for class_index, class_name in enumerate(SYNTHETIC_CLASSES):
        for number in range(per_class):
            rng = np.random.default_rng([config.seed, class_index, number])
            path = folder / f"{class_name}-{number}.avi"
            write_video(path, render_clip(class_name, rng, config), config.fps)
            videos[path] = class_name
    return videos


@pytest.mark.slow
def test_predict_finds_the_class_of_new_videos(
    synthetic_flow_run, synthetic_quickstart_export, tmp_path, cli_runner
):
    """The synthetic-flow run (about 95 % test accuracy) exported alone, and the quickstart's
    two-stream export (the RGB TSM with it), name the class of fresh videos."""
    videos = _new_videos(tmp_path / "videos", per_class=2)
    # Measured with the flow run alone: 14-15 of 16 over seeds 0-2 (training order of record
    # format 2; format 1's gave 15 for seeds 0 and 1): allow two misses in 16.
    export_runs([synthetic_flow_run[1]], tmp_path / "flow")
    for name, export, at_least in (
        ("flow", tmp_path / "flow", 14),
        ("two-stream", synthetic_quickstart_export, 14),
    ):
        result = cli_runner("predict", *videos, "--model", export, "--json")
        assert result.exit_code == 0, result.output
        predicted = {
            Path(entry["video"]): entry["top_k"][0]["class"] for entry in json.loads(result.stdout)
        }
        correct = sum(predicted[path] == label for path, label in videos.items())
        assert correct >= at_least, (name, correct, predicted)
