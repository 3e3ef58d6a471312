"""`actrec export`: SavedModels that reload without actrec and reproduce evaluation exactly."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from cli_processes import cli_output_with_heavy_modules
from file_contents import folder_digests

from actrec.data.format import records
from actrec.data.input.clip_spec import clip_spec
from actrec.data.input.pipeline import build_dataset
from actrec.data.synthetic.config import SYNTHETIC_CLASSES as SYNTHETIC_CLASS_NAMES
from actrec.errors import ConfigError
from actrec.export.serving import build_serving_function
from actrec.export.streams import ExportedStream
from actrec.export.writer import export_runs
from actrec.models.keras_file import load_segment_model
from actrec.predict.video_files import record_inputs
from actrec.runs.trained import build_trained_model, load_trained_run

TOLERANCE = 1e-5
SYNTHETIC_CLASSES = list(SYNTHETIC_CLASS_NAMES)  # label order of the prepared set
# Loads each export with TensorFlow alone and runs it on saved inputs.
FRESH_PROCESS_SCRIPT = """
import json, sys
import numpy as np
import tensorflow as tf

for export_dir, inputs_path, outputs_path in json.loads(sys.argv[1]):
    signature = tf.saved_model.load(export_dir).signatures["serving_default"]
    inputs = dict(np.load(inputs_path))
    outputs = signature(**{name: tf.constant(value) for name, value in inputs.items()})
    arrays = {name: value.numpy() for name, value in outputs.items()}
    arrays = {name: a.astype("S") if a.dtype == object else a for name, a in arrays.items()}
    np.savez(outputs_path, **arrays)
print("ACTREC_IMPORTED", sorted(name for name in sys.modules if name.split(".")[0] == "actrec"))
"""


def _softmax(logits) -> np.ndarray:
    logits = np.asarray(logits, dtype=np.float64)
    exponentials = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def _random_inputs(export: str, width: int, height: int, seed: int) -> dict:
    """Signature inputs of 2 videos of 10 frames at width x height."""
    rng = np.random.default_rng(seed)
    frames = rng.integers(0, 256, (2, 10, height, width, 3), dtype=np.uint8)
    flow = rng.integers(0, 256, (2, 9, height, width, 2), dtype=np.uint8)
    return {"rgb": {"frames": frames}, "flow": {"flow": flow}}.get(
        export, {"frames": frames, "flow": flow}
    )


def _in_process_serving(tiny_runs, export: str):
    """(input names, the serving function over freshly rebuilt models): no SavedModel."""
    modalities = ["rgb", "flow"] if export == "two-stream" else [export]
    runs = [load_trained_run(tiny_runs[modality]) for modality in modalities]
    streams = [
        ExportedStream(clip_spec(run.recipe, False), build_trained_model(run)) for run in runs
    ]
    names = ["frames" if modality == "rgb" else "flow" for modality in modalities]
    return names, build_serving_function(streams, runs[0].classes, 5, (1.0, 1.5))


def test_exports_reload_in_a_fresh_process_without_actrec(tiny_runs, tiny_exports, tmp_path):
    jobs, expected = [], {}
    for export in ("rgb", "flow", "two-stream"):
        names, serve = _in_process_serving(tiny_runs, export)
        for width, height in ((80, 60), (200, 150)):  # training frames were 64x48
            key = f"{export}-{width}x{height}"
            inputs = _random_inputs(export, width, height, seed=len(jobs))
            np.savez(tmp_path / f"{key}-in.npz", **inputs)
            jobs.append([str(tiny_exports[export]), str(tmp_path / f"{key}-in.npz")])
            jobs[-1].append(str(tmp_path / f"{key}-out.npz"))
            outputs = serve(*[inputs[name] for name in names])
            expected[key] = {name: value.numpy() for name, value in outputs.items()}

    finished = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS_SCRIPT, json.dumps(jobs)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert "ACTREC_IMPORTED []" in finished.stdout

    for key, reference in expected.items():
        reloaded = dict(np.load(tmp_path / f"{key}-out.npz"))
        assert sorted(reloaded) == sorted(reference), key
        probabilities = reloaded["probabilities"]
        assert probabilities.shape == (2, 8) and np.isfinite(probabilities).all(), key
        np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)
        for name in reloaded:
            if name == "top_k_classes":
                assert (reloaded[name] == reference[name]).all(), key
            else:
                np.testing.assert_allclose(
                    reloaded[name], reference[name], rtol=0, atol=TOLERANCE, err_msg=key
                )
        # The class names travel with the model, in the order of the indices.
        names = [[name.decode() for name in row] for row in reloaded["top_k_classes"]]
        assert names == [[SYNTHETIC_CLASSES[i] for i in row] for row in reloaded["top_k_indices"]]
        # The two videos score differently: the comparison above is not of constants (on
        # log-probabilities, which a confident class does not flatten).
        assert np.abs(np.log(probabilities[0]) - np.log(probabilities[1])).max() > 1e-3, key
    # The fusion of the logits (as `actrec eval` fuses): softmax of the weighted average of
    # the streams' logits, which are log-probabilities up to a constant per video.
    fused = expected["two-stream-80x60"]
    logits = (np.log(fused["rgb_probabilities"]) + 1.5 * np.log(fused["flow_probabilities"])) / 2.5
    np.testing.assert_allclose(fused["probabilities"], _softmax(logits), atol=1e-5)


def test_export_reproduces_the_evaluation_pipeline(tiny_runs, tiny_exports):
    """The record's decoded frames and flow through the export give softmax(model(clip))
    of the pipeline's evaluation clip: the preprocessing inside the graph is evaluation's."""
    import tensorflow as tf

    prepared = tiny_runs["prepared"]
    pipeline = {}
    for modality in ("rgb", "flow"):
        run = load_trained_run(tiny_runs[modality])
        model = build_trained_model(run)
        spec = clip_spec(run.recipe, training=False)
        dataset = build_dataset(prepared, "test", spec, 4, training=False, with_video_ids=True)
        for clips, _, video_ids in dataset:
            logits = np.asarray(model(clips, training=False), np.float64)
            for video_id, row in zip(video_ids.numpy(), logits, strict=True):
                pipeline.setdefault(video_id.decode(), {})[modality] = row

    signature = tf.saved_model.load(str(tiny_exports["two-stream"])).signatures["serving_default"]
    compared = []
    for video_id, video_records in records.iter_split_videos(prepared, "test"):
        inputs = record_inputs(video_records)
        outputs = signature(frames=inputs["frames"][None], flow=inputs["flow"][None])
        expected = pipeline[video_id]
        for modality in ("rgb", "flow"):
            np.testing.assert_allclose(
                outputs[f"{modality}_probabilities"].numpy()[0],
                _softmax(expected[modality]),
                rtol=0,
                atol=TOLERANCE,
                err_msg=f"{video_id} {modality}",
            )
        np.testing.assert_allclose(  # fused as `actrec eval` fuses: the logits
            outputs["probabilities"].numpy()[0],
            _softmax((expected["rgb"] + 1.5 * expected["flow"]) / 2.5),
            rtol=0,
            atol=TOLERANCE,
        )
        compared.append(expected["flow"])
    assert len(compared) == len(pipeline) == 8
    assert np.std(_softmax(compared), axis=0).max() > 1e-3  # the videos score differently


def test_export_writes_its_description_beside_the_model(tiny_runs, tiny_exports):
    folder = tiny_exports["two-stream"]
    metadata = json.loads((folder / "actrec.json").read_text())
    assert metadata["format"] == "actrec-export" and metadata["model_format"] == "savedmodel"
    assert metadata["modality"] == "two-stream" and metadata["classes"] == SYNTHETIC_CLASSES
    assert [stream["modality"] for stream in metadata["streams"]] == ["rgb", "flow"]
    flow = metadata["streams"][1]
    assert (flow["num_segments"], flow["new_length"], flow["crop_size"]) == (2, 2, 32)
    assert flow["scale_size"] == 37 and flow["sampling"] == "tsn"
    assert flow["run"] == str(tiny_runs["flow"].resolve())
    assert metadata["inputs"]["frames"]["shape"] == ["N", "F", "H", "W", 3]
    assert metadata["inputs"]["flow"]["shape"] == ["N", "F-1", "H", "W", 2]
    assert {"probabilities", "top_k_classes", "rgb_probabilities"} <= set(metadata["outputs"])
    assert metadata["fusion_weights"] == {"rgb": 1.0, "flow": 1.5} and metadata["top_k"] == 5
    assert metadata["preparation"] == {
        "frame_size": "original",
        "fps": None,
        "jpeg_quality": 90,
        "flow": "dis",
    }
    assert (folder / "classes.txt").read_text().splitlines() == SYNTHETIC_CLASSES
    for modality in ("rgb", "flow"):
        copied = (folder / f"recipe-{modality}.yaml").read_text()
        assert copied == (tiny_runs[modality] / "recipe.yaml").read_text()
        assert yaml.safe_load(copied)["data"]["modality"] == modality
    card = (folder / "MODEL_CARD.md").read_text()
    assert "synthetic-rgb" in card and "synthetic-flow" in card
    assert str(tiny_runs["prepared"]) in card and "rgb 1 : flow 1.5" in card
    assert "No evaluation results yet" in card
    single = json.loads((tiny_exports["flow"] / "actrec.json").read_text())
    assert single["modality"] == "flow" and list(single["inputs"]) == ["flow"]
    assert single["fusion_weights"] is None and (tiny_exports["flow"] / "recipe.yaml").is_file()


def test_export_rejects_inputs_of_the_wrong_type_or_shape(tiny_exports):
    import tensorflow as tf

    signature = tf.saved_model.load(str(tiny_exports["flow"])).signatures["serving_default"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="uint8"):
        signature(flow=tf.zeros([1, 9, 48, 64, 2], tf.float32))
    expected = r"flow\\?' must be uint8 \[N, F-1, H, W, 2\]"  # TF escapes the quote
    for shape in ([9, 48, 64, 2], [1, 9, 48, 64, 3], [1, 0, 48, 64, 2]):
        with pytest.raises(tf.errors.InvalidArgumentError, match=expected):
            signature(flow=tf.zeros(shape, tf.uint8))


def _copy_run(run_dir: Path, destination: Path) -> Path:
    shutil.copytree(
        run_dir, destination, ignore=shutil.ignore_patterns("checkpoints", "tensorboard")
    )
    return destination


def test_keras_format_and_evaluation_metrics_in_the_card(tiny_runs, tmp_path, cli_runner):
    run = _copy_run(tiny_runs["rgb"], tmp_path / "rgb-run")
    evaluation = run / "eval" / "test-centre"
    evaluation.mkdir(parents=True)
    results = {"protocol": "centre", "split": "test", "num_videos": 8, "top1": 0.625}
    results.update(top5=0.875, mean_class_accuracy=0.6)
    (evaluation / "results.json").write_text(json.dumps(results))
    (run / "eval" / "broken").mkdir()
    (run / "eval" / "broken" / "results.json").write_text("{not json")

    out = tmp_path / "keras-export"
    result = cli_runner("export", run, "--out", out, "--format", "keras")
    assert result.exit_code == 0, result.output
    assert "exported rgb model" in result.output

    metadata = json.loads((out / "actrec.json").read_text())
    assert metadata["model_format"] == "keras" and metadata["model"] == "model.keras"
    assert metadata["inputs"]["frames"]["shape"] == ["N", 2, 32, 32, 3]
    card = (out / "MODEL_CARD.md").read_text()
    assert "| rgb | centre | test | 8 | 62.5 % | 87.5 % | 60.0 % |" in card
    assert "load_segment_model" in card

    model = load_segment_model(out / "model.keras")
    clips = np.random.default_rng(0).uniform(0, 255, (2, 2, 32, 32, 3)).astype("float32")
    reference = build_trained_model(load_trained_run(run))
    np.testing.assert_allclose(
        model(clips, training=False), reference(clips, training=False), rtol=0, atol=TOLERANCE
    )


def test_an_existing_folder_is_refused_and_left_untouched(tiny_runs, tmp_path, cli_runner):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    before = folder_digests(out)
    for extra in ([], ["--overwrite"]):  # --overwrite replaces only an earlier export
        result = cli_runner("export", tiny_runs["rgb"], "--out", out, "--format", "keras", *extra)
        assert result.exit_code == 1
        assert str(out) in result.output and "error:" in result.output
    assert folder_digests(out) == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out"]  # no leftovers

    export = tmp_path / "export"
    assert (
        cli_runner("export", tiny_runs["rgb"], "--out", export, "--format", "keras").exit_code == 0
    )
    (export / "marker").write_text("from the first export")
    refused = cli_runner("export", tiny_runs["rgb"], "--out", export, "--format", "keras")
    assert refused.exit_code == 1 and "--overwrite" in refused.output
    assert (export / "marker").exists()
    replaced = cli_runner(
        "export", tiny_runs["rgb"], "--out", export, "--format", "keras", "--overwrite"
    )
    assert replaced.exit_code == 0, replaced.output
    assert not (export / "marker").exists() and (export / "model.keras").is_file()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["export", "out"]


def test_runs_that_cannot_be_fused_are_refused(tiny_runs, tmp_path):
    other = _copy_run(tiny_runs["flow"], tmp_path / "other-classes")
    record = json.loads((other / "run.json").read_text())
    record["classes"][0], record["classes"][1] = record["classes"][1], record["classes"][0]
    (other / "run.json").write_text(json.dumps(record))

    out = tmp_path / "out"
    with pytest.raises(ConfigError, match="different classes") as raised:
        export_runs([tiny_runs["rgb"], other], out)
    assert str(tiny_runs["rgb"]) in str(raised.value) and str(other) in str(raised.value)
    with pytest.raises(ConfigError, match="both rgb runs"):
        export_runs([tiny_runs["rgb"], tiny_runs["rgb"]], out)
    with pytest.raises(ConfigError, match="not a run directory"):
        export_runs([tmp_path / "missing"], out)
    with pytest.raises(ConfigError, match="fusion weights"):
        export_runs([tiny_runs["rgb"], tiny_runs["flow"]], out, fusion_weights=(1.0, -1.0))
    assert not out.exists()


@pytest.mark.parametrize(
    ("name", "edit", "expected"),
    [
        ("integers", lambda names: list(range(len(names))), "'classes[0]' should be a class name"),
        ("duplicates", lambda names: [names[0], *names[:-1]], "'classes' should be distinct"),
    ],
)
def test_a_run_whose_classes_predict_would_refuse_is_not_exported(
    tiny_runs, tmp_path, cli_runner, name, edit, expected
):
    """run.json's classes checked by the rule actrec.json's schema holds them to (what
    `predict` reads exports by), before anything is built: nothing written."""
    run = _copy_run(tiny_runs["rgb"], tmp_path / name)
    record = json.loads((run / "run.json").read_text())
    record["classes"] = edit(record["classes"])
    (run / "run.json").write_text(json.dumps(record))
    out = tmp_path / "out"
    started = time.monotonic()
    result = cli_runner("export", run, "--out", out)
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    (line,) = [line for line in result.output.splitlines() if line.strip()]
    assert f"{run / 'run.json'}: field {expected}" in line and "would refuse an export" in line
    assert time.monotonic() - started < 5  # refused before a model is built
    assert sorted(path.name for path in tmp_path.iterdir()) == [name]


def test_moved_training_data_is_asked_for(tiny_runs, tmp_path, cli_runner):
    """The preparation settings predict needs come from the data's manifest; a run whose
    data has moved needs --data."""
    run = _copy_run(tiny_runs["flow"], tmp_path / "run")
    record = json.loads((run / "run.json").read_text())
    record["data"] = str(tmp_path / "moved-away")
    (run / "run.json").write_text(json.dumps(record))

    refused = cli_runner("export", run, "--out", tmp_path / "out", "--format", "keras")
    assert refused.exit_code == 1 and "--data" in refused.output
    assert not (tmp_path / "out").exists()
    data = ["--data", tiny_runs["prepared"]]
    result = cli_runner("export", run, "--out", tmp_path / "out", "--format", "keras", *data)
    assert result.exit_code == 0, result.output
    preparation = json.loads((tmp_path / "out" / "actrec.json").read_text())["preparation"]
    assert preparation["frame_size"] == "original" and preparation["flow"] == "dis"


@pytest.mark.parametrize("command", ["export", "predict"])
def test_help_does_not_import_tensorflow(command):
    output = cli_output_with_heavy_modules([command, "--help"])
    heavy = output[output.rindex("HEAVY") :]
    assert "tensorflow" not in heavy and "keras" not in heavy, heavy
