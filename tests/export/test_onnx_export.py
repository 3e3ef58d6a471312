"""`actrec export --format onnx`: model.onnx run by ONNX Runtime, clip models (one stream and
fused) and the streaming online TSM, against the SavedModel and the run."""

from __future__ import annotations

import json

import numpy as np
import pytest
from streaming_checks import assert_steps_are_the_clip_models_segments

from actrec.data.format.manifest import read_manifest
from actrec.errors import ConfigError
from actrec.export.writer import export_runs
from actrec.predict.stream import StreamingModel
from actrec.predict.video_files import ExportedModel

pytest.importorskip("onnxruntime", reason="the onnx extra (pip install 'actrec[onnx]')")
pytest.importorskip("tf2onnx", reason="the onnx extra (pip install 'actrec[onnx]')")


def _test_videos(prepared) -> list:
    return [v["path"] for v in read_manifest(prepared)["videos"] if v["split"] == "test"]


def test_onnx_clip_models_predict_as_the_savedmodel(tiny_runs, tiny_exports, tmp_path, cli_runner):
    """ONNX Runtime gives the SavedModel's probabilities (<= 1e-4) on every tiny test video,
    one stream and two fused; the batch is dynamic (3 clips at once = one by one)."""
    import onnxruntime

    two = tmp_path / "two"
    result = cli_runner(
        "export", tiny_runs["flow"], "--fuse", tiny_runs["rgb"], "--out", two, "--format", "onnx"
    )
    assert result.exit_code == 0, result.output
    assert "two-stream model (8 classes, onnx)" in result.output
    summary = export_runs([tiny_runs["rgb"]], tmp_path / "rgb", model_format="onnx", opset=15)
    assert summary.reload_difference <= 1e-4
    metadata = json.loads((two / "actrec.json").read_text())
    assert (metadata["model_format"], metadata["model"], metadata["opset"]) == (
        "onnx",
        "model.onnx",
        17,
    )
    assert metadata["inputs"]["frames"]["shape"] == ["N", 2, 32, 32, 3]
    assert metadata["inputs"]["flow"]["shape"] == ["N", 2, 32, 32, 4]  # new_length 2
    assert json.loads((tmp_path / "rgb" / "actrec.json").read_text())["opset"] == 15
    for saved_name, onnx_folder in (("two-stream", two), ("rgb", tmp_path / "rgb")):
        saved, onnx = ExportedModel(tiny_exports[saved_name]), ExportedModel(onnx_folder)
        for video in _test_videos(tiny_runs["prepared"]):
            inputs = saved.video_inputs(video)
            np.testing.assert_allclose(
                onnx.probabilities(inputs), saved.probabilities(inputs), atol=1e-4, rtol=0
            )
    session = onnxruntime.InferenceSession(str(tmp_path / "rgb" / "model.onnx"))
    clips = np.random.default_rng(1).uniform(0, 255, (3, 2, 32, 32, 3)).astype(np.float32)
    batched = session.run(["probabilities"], {"frames": clips})[0]
    single = [session.run(["probabilities"], {"frames": clip[None]})[0][0] for clip in clips]
    np.testing.assert_allclose(batched, np.stack(single), atol=1e-6, rtol=0)

    video = _test_videos(tiny_runs["prepared"])[0]
    result = cli_runner("predict", video, "--model", two, "--provider", "cpu", "--json")
    assert result.exit_code == 0, result.output
    expected = ExportedModel(tiny_exports["two-stream"]).predict_video(video)
    predicted = json.loads(result.stdout)[0]["top_k"][0]
    assert predicted["class"] == expected.top_k[0][0]
    assert abs(predicted["probability"] - expected.top_k[0][1]) <= 1e-4


def test_onnx_streaming_model_equals_the_clip_model_per_segment(
    tiny_online, tiny_synthetic_prepared, tmp_path
):
    export_runs([tiny_online["run"]], tmp_path / "onnx", model_format="onnx", streaming=True)
    model = StreamingModel(tmp_path / "onnx", provider="cpu")
    assert model.streaming["frames_per_step"] == 6
    assert model.metadata["inputs"]["state_00"]["shape"][0] == "N"
    assert_steps_are_the_clip_models_segments(model, tiny_online["run"], tiny_synthetic_prepared)


def test_onnx_options_it_cannot_honour_are_refused(tiny_runs, tiny_exports, tmp_path, cli_runner):
    run = tiny_runs["rgb"]
    for arguments, message in (
        (["--format", "onnx", "--quantize", "dynamic"], "--quantize dynamic needs --format tflite"),
        (["--format", "onnx", "--opset", "9"], "--opset 9 is not valid; choose one from 13 to 18"),
        (["--opset", "17"], "--opset is an option of --format onnx; --format savedmodel does"),
        (["--format", "keras", "--streaming"], "is not an online TSM"),
    ):
        out = tmp_path / "refused"
        result = cli_runner("export", run, "--out", out, *arguments)
        assert result.exit_code == 1 and message in result.output, (arguments, result.output)
        assert not out.exists()
    video = _test_videos(tiny_runs["prepared"])[0]
    result = cli_runner("predict", video, "--model", tiny_exports["rgb"], "--provider", "cpu")
    assert result.exit_code == 1
    assert "--provider is an option of --format onnx;" in result.output
    assert "a TensorFlow SavedModel export, does not take it" in result.output
    import onnxruntime

    if "CUDAExecutionProvider" not in onnxruntime.get_available_providers():
        with pytest.raises(ConfigError, match=r"has no CUDAExecutionProvider .* onnxruntime-gpu"):
            from actrec.export.formats.onnx import execution_providers

            execution_providers("cuda")


def test_a_function_with_an_op_onnx_lacks_fails_at_export_naming_the_op():
    """tf2onnx logs a TensorFlow op it cannot convert and still returns a model; the export
    refuses it, naming the op, instead of writing a model ONNX Runtime cannot load."""
    import tensorflow as tf

    from actrec.errors import ActrecError
    from actrec.export.formats.onnx import converted

    signature = [tf.TensorSpec([None, 4], tf.float32, name="x")]

    def reinterpreted(x):
        return {"y": tf.cast(tf.bitcast(x, tf.int32), tf.float32)}

    with pytest.raises(ActrecError, match="no conversion for the TensorFlow ops Bitcast"):
        converted(reinterpreted, signature, 17)
    assert converted(lambda x: {"y": 2 * x}, signature, 17)  # what converts still does


def test_a_grouped_3d_convolution_is_named_with_the_format_that_converts_it():
    """Keras runs a grouped Conv3D in an XLA-compiled function of its own, which tf2onnx
    leaves as a call: refused in one line that says why and points at the SavedModel, not at
    TFLite (which has no kernel for it either)."""
    import keras
    import tensorflow as tf

    from actrec.errors import ActrecError
    from actrec.export.formats.onnx import converted

    clip = keras.Input((4, 8, 8, 6))
    grouped = keras.Model(clip, keras.layers.Conv3D(6, 3, groups=6)(clip))
    signature = [tf.TensorSpec([1, 4, 8, 8, 6], tf.float32)]
    with pytest.raises(ActrecError) as refused:
        converted(lambda x: {"out": grouped(x)}, signature, 17)
    message = str(refused.value)
    assert "StatefulPartitionedCall" in message and "grouped convolutions" in message
    assert message.endswith("export --format savedmodel") and "\n" not in message
