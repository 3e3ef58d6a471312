"""Every export's MODEL_CARD.md code, taken from the written card, runs in a fresh Python
process and gives the exporting run's outputs (tests/card_harness.py): SavedModel, Keras,
TFLite and ONNX; one stream, two streams fused, the online TSM's streaming step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from card_harness import run_cards

from actrec.data.input.clip_spec import clip_spec
from actrec.export.formats.registry import ExportRequest
from actrec.export.metadata import read_export_metadata
from actrec.export.streams import ExportedStream
from actrec.export.writer import export_runs
from actrec.runs.trained import build_trained_model, load_trained_run

TOLERANCE = {"savedmodel": 1e-5, "keras": 1e-5, "tflite": 1e-4, "onnx": 1e-4}
"""The formats' own tolerances against the exporting run (float32)."""
FUSION_WEIGHTS = (1.0, 1.5)  # export's default


def _streams(run_dirs: list[Path]) -> list[ExportedStream]:
    runs = sorted((load_trained_run(path) for path in run_dirs), key=lambda r: r.modality != "rgb")
    return [
        ExportedStream(clip_spec(run.recipe, False), build_trained_model(run), run) for run in runs
    ]


def _numpy(outputs) -> dict:
    if not isinstance(outputs, dict):
        outputs = {"outputs": outputs}
    return {name: np.asarray(value) for name, value in outputs.items()}


def reference_outputs(export: Path, inputs: dict) -> dict:
    """What the exporting runs' models, rebuilt in this process, give on the card's inputs:
    the export's own graph functions over them (no file written or read back)."""
    metadata = read_export_metadata(export)
    streams = _streams([Path(stream["run"]) for stream in metadata["streams"]])
    model_format, streaming = metadata["model_format"], bool(metadata.get("streaming"))
    if model_format == "savedmodel" and streaming:
        from actrec.export.streaming_export import build_streaming_serving
        from actrec.models.streaming import streaming_state_shapes

        shapes = streaming_state_shapes(streams[0].model)
        serve, signature = build_streaming_serving(streams[0].model, streams[0].spec, shapes)
        return _numpy(serve(*[inputs[spec.name] for spec in signature]))
    if model_format == "savedmodel":
        from actrec.export.serving import build_serving_function

        classes = metadata["classes"]
        serve = build_serving_function(streams, classes, metadata["top_k"], FUSION_WEIGHTS)
        return _numpy(serve(*[inputs[stream.input_name] for stream in streams]))
    if model_format == "keras":
        if len(streams) == 1:
            return _numpy(streams[0].model(inputs["frames"], training=False))
        from actrec.models.fusion import build_two_stream_model

        model = build_two_stream_model(streams[0].model, streams[1].model, FUSION_WEIGHTS)
        return _numpy(model({"rgb": inputs["rgb"], "flow": inputs["flow"]}, training=False))
    from actrec.export.ready_clips import model_function

    request = ExportRequest(streams, metadata["classes"], 5, FUSION_WEIGHTS, streaming=streaming)
    function, signature, _ = model_function(request, None)
    outputs = _numpy(function(*[inputs[spec.name] for spec in signature]))
    if model_format == "onnx":  # an ONNX output cannot share an input's name
        outputs = {f"next_{n}" if n.startswith("state_") else n: v for n, v in outputs.items()}
    return outputs


@pytest.fixture(scope="module")
def card_exports(tiny_runs, tiny_exports, tiny_online, tmp_path_factory) -> list[Path]:
    """One export of each format and variant: the SavedModel, TFLite and ONNX ones first
    (their cards must not need actrec), the Keras ones last."""
    folder = tmp_path_factory.mktemp("card-exports")
    two_stream = [tiny_runs["rgb"], tiny_runs["flow"]]
    online = [tiny_online["run"]]
    exports = [tiny_exports["rgb"], tiny_exports["two-stream"], tiny_online["export"]]
    for name, runs, options in (
        ("tflite-two-stream", two_stream, {"model_format": "tflite"}),
        ("tflite-streaming", online, {"model_format": "tflite", "streaming": True}),
        ("onnx-two-stream", two_stream, {"model_format": "onnx"}),
        ("onnx-streaming", online, {"model_format": "onnx", "streaming": True}),
        ("keras-tsm", online, {"model_format": "keras"}),
        ("keras-two-stream", two_stream, {"model_format": "keras"}),
    ):
        summary = export_runs(runs, folder / name, **options)
        # The Keras export checks itself with its card's code in a fresh process.
        assert summary.reloaded_in_fresh_process == (options["model_format"] == "keras")
        exports.append(folder / name)
    return exports


def test_every_model_cards_code_runs_in_a_fresh_process_and_gives_the_runs_outputs(
    card_exports, tmp_path
):
    runs = run_cards(card_exports, tmp_path)
    compared = set()
    for run in runs:
        metadata = read_export_metadata(run.folder)
        model_format = metadata["model_format"]
        if model_format != "keras":  # TensorFlow, LiteRT or ONNX Runtime alone
            assert run.actrec_modules == [], run.folder.name
        expected = reference_outputs(run.folder, run.inputs)
        assert run.outputs and set(run.outputs) <= set(expected), (run.folder.name, run.outputs)
        for name, value in run.outputs.items():
            if value.dtype.kind == "S":  # the SavedModel's top-k class names
                assert (value == expected[name].astype("S")).all(), (run.folder.name, name)
                continue
            difference = np.abs(value.astype(np.float64) - expected[name]).max()
            assert difference <= TOLERANCE[model_format], (run.folder.name, name, difference)
        scores = next(
            run.outputs[name]
            for name in ("probabilities", "logits", "outputs")
            if name in run.outputs
        )
        assert np.abs(scores[0] - scores[-1]).max() > 1e-4 or scores.shape[0] == 1
        compared.add((model_format, len(metadata["streams"]), bool(metadata.get("streaming"))))
    assert compared == {
        ("savedmodel", 1, False),
        ("savedmodel", 2, False),
        ("savedmodel", 1, True),
        ("tflite", 2, False),
        ("tflite", 1, True),
        ("onnx", 2, False),
        ("onnx", 1, True),
        ("keras", 1, False),
        ("keras", 2, False),
    }
