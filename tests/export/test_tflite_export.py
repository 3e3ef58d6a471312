"""`actrec export --format tflite [--quantize ...]`: model.tflite for devices, run by
`actrec predict` as it runs a SavedModel, clip models and streaming online TSMs alike."""

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


def _test_videos(prepared) -> list:
    return [v["path"] for v in read_manifest(prepared)["videos"] if v["split"] == "test"]


def test_tflite_clip_models_predict_as_the_savedmodel(tiny_runs, tiny_exports, tmp_path):
    """float32 TFLite gives the SavedModel's probabilities (<= 1e-4) on every tiny test
    video (two streams fused: both modalities and the fusion); dynamic-range quantisation
    stores the weights as int8 (a quarter of the size for a real network; the test
    network's tensors are so small that most stay float32: TFLite quantises those of at
    least 1024 elements)."""
    summary = export_runs(
        [tiny_runs["flow"], tiny_runs["rgb"]], tmp_path / "two", model_format="tflite"
    )
    assert summary.reload_difference <= 1e-4
    metadata = json.loads((tmp_path / "two" / "actrec.json").read_text())
    assert metadata["model_format"] == "tflite" and metadata["quantize"] == "none"
    assert metadata["inputs"]["frames"]["shape"] == [1, 2, 32, 32, 3]
    assert metadata["inputs"]["flow"]["shape"] == [1, 2, 32, 32, 4]  # new_length 2
    saved, lite = ExportedModel(tiny_exports["two-stream"]), ExportedModel(tmp_path / "two")
    for video in _test_videos(tiny_runs["prepared"]):
        inputs = saved.video_inputs(video)
        np.testing.assert_allclose(
            lite.probabilities(inputs), saved.probabilities(inputs), atol=1e-4, rtol=0
        )
    export_runs([tiny_runs["rgb"]], tmp_path / "int8", model_format="tflite", quantize="dynamic")
    export_runs([tiny_runs["rgb"]], tmp_path / "float", model_format="tflite")
    float_sizes, int8_sizes = (
        _int8_tensor_sizes(tmp_path / name / "model.tflite") for name in ("float", "int8")
    )
    assert float_sizes == [] and max(int8_sizes) >= 1024
    float_file, int8_file = (tmp_path / name / "model.tflite" for name in ("float", "int8"))
    # each int8 element saves 3 of its 4 bytes; scales and a dequantisation take some back
    saved = float_file.stat().st_size - int8_file.stat().st_size
    assert saved > 0.5 * 3 * sum(int8_sizes)


def _int8_tensor_sizes(path) -> list[int]:
    """The element counts of the int8 tensors of a TFLite model (its quantised weights)."""
    import tensorflow as tf

    interpreter = tf.lite.Interpreter(model_path=str(path))
    return [
        int(np.prod(detail["shape"]))
        for detail in interpreter.get_tensor_details()
        if detail["dtype"] == np.int8
    ]


def test_tflite_streaming_model_equals_the_clip_model_per_segment(
    tiny_online, tiny_synthetic_prepared, tmp_path
):
    export_runs([tiny_online["run"]], tmp_path / "lite", model_format="tflite", streaming=True)
    model = StreamingModel(tmp_path / "lite")
    assert model.streaming["frames_per_step"] == 6
    assert_steps_are_the_clip_models_segments(model, tiny_online["run"], tiny_synthetic_prepared)


def test_tflite_bad_options_are_named(tiny_runs, tmp_path, cli_runner):
    run = tiny_runs["rgb"]
    result = cli_runner(
        "export", run, "--out", tmp_path / "a", "--format", "tflite", "--quantize", "int4"
    )
    assert (
        result.exit_code != 0
        and "'int4' is not one of 'none', 'float16', 'dynamic'" in result.output
    )
    result = cli_runner("export", run, "--out", tmp_path / "b", "--quantize", "float16")
    assert result.exit_code == 1 and "--quantize float16 needs --format tflite" in result.output
    with pytest.raises(ConfigError, match="--quantize 'int4' is not valid; choose one of"):
        export_runs([run], tmp_path / "c", model_format="tflite", quantize="int4")
    result = cli_runner("export", run, "--out", tmp_path / "d", "--format", "keras", "--streaming")
    assert result.exit_code == 1 and "is not an online TSM" in result.output
    assert not any((tmp_path / name).exists() for name in "abcd")


def test_ops_tflite_has_no_kernel_for_are_named_in_one_line_not_a_traceback():
    """A grouped 3D convolution (Keras's Conv3D with groups, which TFLite has no builtin for;
    actrec's MoViNet computes its depthwise 3D convolutions otherwise) is refused by name,
    with the format that does convert it; a model without one converts."""
    import keras
    import tensorflow as tf

    from actrec.errors import ActrecError
    from actrec.export.tflite_flatbuffers import converted

    clip = keras.Input((4, 8, 8, 6))
    grouped = keras.Model(clip, keras.layers.Conv3D(6, 3, groups=6)(clip))
    plain = keras.Model(clip, keras.layers.Conv3D(6, 3)(clip))
    signature = [tf.TensorSpec([1, 4, 8, 8, 6], tf.float32)]
    with pytest.raises(ActrecError) as refused:
        converted(lambda x: {"out": grouped(x)}, signature, [grouped], "none")
    message = str(refused.value)
    assert message.startswith("the model does not convert to TFLite")
    assert "Conv3D" in message and "groups" in message
    assert message.endswith("export --format savedmodel") and "\n" not in message
    assert len(converted(lambda x: {"out": plain(x)}, signature, [plain], "none")) > 1000
