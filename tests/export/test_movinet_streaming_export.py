"""A MoViNet stream run (`model.backbone: test_movinet_stream`, the causal network) exported
`--streaming` in every format runs frame by frame: its last step's logits are the trained
clip model's on the frames fed (its step's logits are the clip's on every frame so far, not
one segment's), untrusted SavedModels rebuilt by actrec, the int8 step within its accuracy
gate, and `predict --stream --annotate` writes the annotated video. Every weight is drawn
from a seed after the one training step (a random MoViNet's logits barely depend on its
input)."""

from __future__ import annotations

import collections
import json
import re
import shutil

import numpy as np
import pytest
from card_harness import run_cards
from fixtures.built_once import built_once
from movinet_weights import seeded
from streaming_checks import assert_last_step_is_the_clip_model

from actrec.config.files import load_recipe
from actrec.config.overrides import apply_overrides
from actrec.export.tflite_flatbuffers import TfliteRunner
from actrec.export.writer import export_runs
from actrec.predict.stream import StreamingModel
from actrec.runs.trained import build_trained_model, load_trained_run
from actrec.train.run import train

MOVINET_STREAM_SETTINGS = [
    "model.architecture=movinet",
    "model.backbone=test_movinet_stream",
    "model.weights=none",
    "data.crop_size=32",
    "data.num_segments=4",
    "data.sampling=dense",  # MoViNet's clip: consecutive frames at its rate
    "data.frame_interval=2",
    "train.batch_size=4",
    "train.epochs=1",
    "runtime.steps_per_epoch=1",
    "runtime.validate_every_epochs=0",
]


def _op_counts(path) -> collections.Counter:
    """{TFLite op type: how many} of a .tflite file's graph, and "SLICE STEP > 1": its
    strided slices with a step other than 1 (XNNPACK leaves those to LiteRT)."""
    from tensorflow.lite.tools import flatbuffer_utils

    model = flatbuffer_utils.convert_bytearray_to_object(bytearray(path.read_bytes()))
    counts = collections.Counter()
    for graph in model.subgraphs:
        for op in graph.operators:
            name = flatbuffer_utils.opcode_to_name(model, op.opcodeIndex)
            counts[name] += 1
            if name == "STRIDED_SLICE":
                strides = model.buffers[graph.tensors[op.inputs[3]].buffer].data
                steps = np.frombuffer(bytes(strides), dtype=np.int32)
                counts["SLICE STEP > 1"] += int(np.any(steps != 1))
    return counts


@pytest.fixture(scope="module")
def movinet_run(tiny_synthetic_prepared, tmp_path_factory):
    """A test_movinet_stream run trained one step on the tiny synthetic set, its weights then
    drawn from a seed."""

    def build(folder):
        recipe = apply_overrides(load_recipe("synthetic-rgb"), MOVINET_STREAM_SETTINGS)
        train(recipe, tiny_synthetic_prepared, folder)
        run = load_trained_run(folder)
        seeded(build_trained_model(run), seed=3).save_weights(str(run.weights_path))
        return folder

    return built_once(tmp_path_factory, "movinet-stream-run", build)


@pytest.mark.parametrize(
    ("options", "atol"),
    [((), 1e-5), (("--format", "tflite"), 1e-4), (("--format", "onnx"), 1e-4)],
    ids=["savedmodel", "tflite", "onnx"],
)
def test_each_format_streams_the_clip_model_frame_by_frame(
    cli_runner, movinet_run, tiny_synthetic_prepared, tmp_path, options, atol
):
    out = tmp_path / "stream"
    result = cli_runner("export", movinet_run, "--out", out, "--streaming", *options)
    assert result.exit_code == 0, result.output
    assert "exported streaming MoViNet model" in result.output
    streaming = json.loads((out / "actrec.json").read_text())["streaming"]
    assert streaming["logits"] == "clip" and streaming["frames_per_step"] == 2
    assert streaming["states"][-1]["state"] == "state_frame_count"
    assert "of the MoViNet stream's one-frame step" in (out / "MODEL_CARD.md").read_text()
    if "tflite" in options:  # float32 keeps TFLite's fused hard swish, its fastest
        kinds = _op_counts(out / "model.tflite")
        assert kinds["HARD_SWISH"] >= 3 and kinds["AVERAGE_POOL_2D"] >= 1, kinds
        assert kinds["SLICE STEP > 1"] == 0, kinds
    steps = assert_last_step_is_the_clip_model(
        StreamingModel(out), movinet_run, tiny_synthetic_prepared, atol
    )
    assert np.abs(steps[-1] - steps[0]).max() > 100 * atol  # the frames change the logits


def test_the_untrusted_savedmodel_is_rebuilt_and_gives_the_loaders_steps(
    movinet_run, tiny_synthetic_prepared, tmp_path
):
    export_runs([movinet_run], tmp_path / "stream", streaming=True)
    rebuilt = assert_last_step_is_the_clip_model(
        StreamingModel(tmp_path / "stream"), movinet_run, tiny_synthetic_prepared, 1e-5
    )
    loaded = assert_last_step_is_the_clip_model(
        StreamingModel(tmp_path / "stream", trust_model=True),
        movinet_run,
        tiny_synthetic_prepared,
        1e-5,
    )
    np.testing.assert_allclose(rebuilt, loaded, atol=1e-6, rtol=0)


def test_the_int8_step_is_gated_on_its_last_step_and_predict_annotates_a_video(
    cli_runner, movinet_run, tiny_synthetic_prepared, tmp_path
):
    out = tmp_path / "int8"
    result = cli_runner(
        "export", movinet_run, "--out", out, "--streaming", "--format", "tflite",
        "--quantize", "int8", "--calibration-data", tiny_synthetic_prepared,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    gate = json.loads((out / "actrec.json").read_text())["quantization"]["gate"]
    assert gate["clips"] == 8 and gate["verdict"] == "passed"
    # Hard swish as int8 ops XNNPACK runs (it has no int8 HARD_SWISH), one frame-count
    # division shared by the blocks' cumulative pools, and the skip's pool as a depthwise
    # sum, not strided slices nor an int8 AVERAGE_POOL_2D, which XNNPACK leaves to LiteRT
    # (actrec.backbones.tflite_forms).
    kinds = _op_counts(out / "model.tflite")
    assert "HARD_SWISH" not in kinds and kinds["DIV"] <= 2, kinds
    assert "AVERAGE_POOL_2D" not in kinds and kinds["SLICE STEP > 1"] == 0, kinds
    # The frame buffers are int8 in and out (one scale: fed back as they came out, no
    # QUANTIZE / DEQUANTIZE a frame); the cumulative pools' growing sums stay float32.
    metadata = json.loads((out / "actrec.json").read_text())
    runner = TfliteRunner(out / "model.tflite")
    shapes = {state["input"]: state["shape"] for state in metadata["streaming"]["states"]}
    buffers = [name for name, shape in shapes.items() if np.prod(shape[1:-1]) > 1]
    assert buffers and metadata["int8_states"] == buffers, (metadata["int8_states"], shapes)
    for name in shapes:
        kind = np.int8 if name in buffers else np.float32
        assert runner.input_details[name]["dtype"] == runner.output_details[name]["dtype"] == kind
        assert metadata["inputs"][name]["dtype"] == np.dtype(kind).name  # what actrec.json says
        if name in buffers:  # a zero state is the zero point
            zero_point = runner.input_details[name]["quantization"][1]
            assert metadata["inputs"][name]["quantization"]["zero_point"] == zero_point
    # The card's code, in a fresh process, takes the int8 states as the card lists them and
    # gives them back as int8 (and the rest as float32), the step's logits finite.
    (card_run,) = run_cards([out], tmp_path)
    assert card_run.actrec_modules == [] and np.all(np.isfinite(card_run.outputs["logits"]))
    for name in shapes:
        assert card_run.inputs[name].dtype == card_run.outputs[name].dtype, name
        assert card_run.outputs[name].dtype == (np.int8 if name in buffers else np.float32)
    video = next((tiny_synthetic_prepared.parent / "raw").rglob("*.avi"))
    annotated = tmp_path / "annotated.mp4"
    result = cli_runner("predict", video, "--model", out, "--stream", "--annotate", annotated)
    assert result.exit_code == 0, result.output
    assert annotated.is_file() and annotated.stat().st_size > 0
    # a running prediction every fed frame, which is this frame's: a MoViNet step's logits
    # are the clip's so far, not one segment's to average over num_segments steps
    lines = re.findall(r" s  (\S+ [0-9.]+).*\(this frame: (\S+ [0-9.]+)\)", result.output)
    assert len(lines) >= 5 and all(running == this for running, this in lines), result.output


def test_a_base_movinet_run_is_refused_by_name_and_nothing_is_written(
    cli_runner, movinet_run, tmp_path
):
    base = tmp_path / "base-run"
    shutil.copytree(movinet_run, base)
    recipe = (base / "recipe.yaml").read_text()
    (base / "recipe.yaml").write_text(recipe.replace("test_movinet_stream", "test_movinet"))
    result = cli_runner("export", base, "--out", tmp_path / "out", "--streaming")
    assert result.exit_code != 0
    assert "is a movinet test_movinet run, which does not run frame by frame" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "out").exists()
