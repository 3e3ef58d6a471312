"""`actrec export --quantize int8`: full-integer TFLite and QDQ ONNX, calibrated on the run's
own training clips, their accuracy gated against the float model on the held-out clips."""

from __future__ import annotations

import json

import numpy as np
import onnx

from actrec.export.metadata import read_export_metadata
from actrec.export.quantization.calibration import HELD_OUT_SPLITS, clip_set
from actrec.export.tflite_flatbuffers import TfliteRunner
from actrec.export.writer import export_runs


def _tensor_types(path) -> tuple[dict, list, list]:
    """({tensor name: dtype} of the model's tensors, input details, output details)."""
    import tensorflow as tf

    interpreter = tf.lite.Interpreter(model_path=str(path))
    tensors = {detail["name"]: detail["dtype"] for detail in interpreter.get_tensor_details()}
    return tensors, interpreter.get_input_details(), interpreter.get_output_details()


def _op_types(path) -> dict[str, set]:
    """{TFLite op name: the dtypes of its first input and its output}, over the model's ops."""
    import tensorflow as tf

    interpreter = tf.lite.Interpreter(model_path=str(path))
    dtypes = {detail["index"]: detail["dtype"] for detail in interpreter.get_tensor_details()}
    types: dict[str, set] = {}
    for op in interpreter._get_ops_details():
        tensors = [op["inputs"][0], op["outputs"][0]]
        types.setdefault(op["op_name"], set()).update(dtypes[int(t)] for t in tensors)
    return types


def _recomputed_agreement(float_dir, int8_dir, prepared, streams_of) -> tuple[float, int]:
    """Both exported models' top class on the gate's clips (the test split: the tiny set has
    no val split), run here: (agreement, clips)."""
    from actrec.export.formats.registry import format_of_export

    metadata = read_export_metadata(float_dir)
    clips = clip_set(prepared, HELD_OUT_SPLITS, streams_of, metadata["classes"], 64)
    runs = []
    for folder in (float_dir, int8_dir):
        meta = read_export_metadata(folder)
        model = format_of_export(folder, meta).clip_model(folder, meta)
        runs.append(model.run)
    tops = [
        np.array([np.argmax(run(clips.clip(i))["logits"][0]) for i in range(clips.count)])
        for run in runs
    ]
    return float(np.mean(tops[0] == tops[1])), clips.count


def _streams(run_dir):
    from actrec.data.input.clip_spec import clip_spec
    from actrec.export.streams import ExportedStream
    from actrec.runs.trained import load_trained_run

    run = load_trained_run(run_dir, "final")
    return [ExportedStream(clip_spec(run.recipe, training=False), run=run)]


def test_int8_tflite_is_full_integer_and_gated(tiny_runs, tmp_path, cli_runner):
    """The conv weights and the activations are int8, the input and output float32 by
    default (uint8 / int8 with --integer-io); the gate's figures are in actrec.json and the
    model card, and its agreement is what running both exports gives."""
    run, prepared = tiny_runs["rgb"], tiny_runs["prepared"]
    export_runs([run], tmp_path / "float", model_format="tflite")
    result = cli_runner(
        "export", run, "--out", tmp_path / "int8", "--format", "tflite", "--quantize", "int8",
        "--calibration-clips", "8", "--max-drop", "100",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "accuracy gate: top-1 float32" in result.output and "8 test clips" in result.output
    tensors, inputs, outputs = _tensor_types(tmp_path / "int8" / "model.tflite")
    assert inputs[0]["dtype"] == np.float32 and outputs[0]["dtype"] == np.float32
    int8_tensors = [name for name, dtype in tensors.items() if dtype == np.int8]
    assert any("conv" in name.lower() for name in int8_tensors), int8_tensors
    assert len(int8_tensors) > len(tensors) // 2  # activations too, not weights only
    assert np.float32 not in {dtype for name, dtype in tensors.items() if "conv" in name.lower()}
    # ... but the classifier's product stays float32 (int8 logits flip near-even classes)
    op_types = _op_types(tmp_path / "int8" / "model.tflite")
    assert op_types["FULLY_CONNECTED"] == {np.float32}
    assert op_types["CONV_2D"] == op_types["DEPTHWISE_CONV_2D"] == {np.int8}

    metadata = read_export_metadata(tmp_path / "int8")
    gate = metadata["quantization"]["gate"]
    assert metadata["quantization"]["method"] == "int8"
    assert metadata["quantization"]["float_products"] is True
    assert metadata["quantization"]["calibration"]["clips"] == 8
    assert metadata["quantization"]["calibration"]["split"] == "train"
    assert gate["split"] == "test" and gate["clips"] == 8 and gate["max_drop"] == 100
    assert "accuracy gate" in metadata["reload_check"]["measure"]
    agreement, count = _recomputed_agreement(
        tmp_path / "float", tmp_path / "int8", prepared, _streams(run)
    )
    assert (gate["agreement"], gate["clips"]) == (agreement, count)
    assert agreement >= 0.75  # the tiny model: int8 keeps (nearly) every top class
    card = (tmp_path / "int8" / "MODEL_CARD.md").read_text()
    assert "## Quantisation" in card and f"{gate['agreement']:.1%}" in card
    assert "the classifier's, in float32" in card
    assert f"{gate['float_top1']:.1%} float32" in card

    export_runs(
        [run], tmp_path / "io", model_format="tflite", quantize="int8",
        quantization=_options(integer_io=True, max_drop=100, gate_clips=1),
    )  # fmt: skip
    _, inputs, outputs = _tensor_types(tmp_path / "io" / "model.tflite")
    assert inputs[0]["dtype"] == np.uint8 and {o["dtype"] for o in outputs} == {np.int8}
    metadata = json.loads((tmp_path / "io" / "actrec.json").read_text())
    assert metadata["integer_io"] is True and metadata["quantization"]["float_products"] is False
    assert _op_types(tmp_path / "io" / "model.tflite")["FULLY_CONNECTED"] == {np.int8}
    # the runner quantises the float 0-255 input and dequantises the outputs
    clip = np.full([1, 2, 32, 32, 3], 128.0, np.float32)
    probabilities = TfliteRunner(tmp_path / "io" / "model.tflite").run({"frames": clip})
    assert abs(float(np.sum(probabilities["probabilities"])) - 1) < 0.05


def _options(**values):
    from actrec.export.quantization.quantized_export import QuantizationOptions

    return QuantizationOptions(**{"calibration_clips": 8, **values})


def test_int8_onnx_has_qdq_nodes_and_is_gated(tiny_runs, tmp_path):
    """ONNX int8: QuantizeLinear / DequantizeLinear around the ops, run by ONNX Runtime;
    its gate agreement is what running the float and the int8 export gives."""
    run = tiny_runs["rgb"]
    export_runs([run], tmp_path / "float", model_format="onnx")
    summary = export_runs(
        [run], tmp_path / "int8", model_format="onnx", quantize="int8",
        quantization=_options(max_drop=100),
    )  # fmt: skip
    graph = onnx.load(str(tmp_path / "int8" / "model.onnx")).graph
    ops = {node.op_type for node in graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops
    assert sum(node.op_type == "DequantizeLinear" for node in graph.node) > 10
    # the classifier's product stays float32: its weights are not quantised, nor its output
    dequantized = {node.output[0] for node in graph.node if node.op_type == "DequantizeLinear"}
    quantized = {node.input[0] for node in graph.node if node.op_type == "QuantizeLinear"}
    products = [node for node in graph.node if node.op_type in ("MatMul", "Gemm")]
    assert products and all(node.input[1] not in dequantized for node in products)
    classifier = [node for node in graph.node if "classifier" in node.name]
    assert classifier and not any(set(node.output) & quantized for node in classifier)
    gate = read_export_metadata(tmp_path / "int8")["quantization"]["gate"]
    assert summary.gate.agreement == gate["agreement"]
    agreement, count = _recomputed_agreement(
        tmp_path / "float", tmp_path / "int8", tiny_runs["prepared"], _streams(run)
    )
    assert (gate["agreement"], gate["clips"]) == (agreement, count)
    assert agreement >= 0.75


def test_streaming_int8_is_calibrated_on_real_states_and_gated(tiny_online, tmp_path):
    """The online TSM's step in int8 TFLite and ONNX: calibrated on the frames of training
    clips with the states the float step met, gated on the test clips streamed frame by
    frame; the frame and the logits float32, the states float32 but those whose int8 input
    and output share scale and zero point, which are int8 in and out (fed back as they come
    out); `actrec predict --stream` runs it."""
    from actrec.predict.stream import StreamingModel

    run = tiny_online["run"]
    options = _options(calibration_clips=4, max_drop=100)
    for model_format in ("tflite", "onnx"):
        out = tmp_path / model_format
        summary = export_runs(
            [run], out, model_format=model_format, streaming=True, quantize="int8",
            quantization=options,
        )  # fmt: skip
        entry = read_export_metadata(out)["quantization"]
        assert entry["calibration"]["clips"] == 4 and entry["calibration"]["frames"] == 8
        assert entry["gate"]["split"] == "test" and entry["gate"]["clips"] == 8
        # the tiny model's logits nearly tie (an untrained network): most clips keep their
        # class
        assert entry["gate"]["agreement"] == summary.gate.agreement >= 0.625
        model = StreamingModel(out)
        frame = np.full([48, 64, 3], 100, np.uint8)
        assert np.all(np.isfinite(model.step(frame)))
    tensors, _, _ = _tensor_types(tmp_path / "tflite" / "model.tflite")
    assert sum(dtype == np.int8 for dtype in tensors.values()) > len(tensors) // 2
    int8_states = read_export_metadata(tmp_path / "tflite").get("int8_states", [])
    runner = TfliteRunner(tmp_path / "tflite" / "model.tflite")
    ins, outs = runner.input_details, runner.output_details
    assert ins["frame"]["dtype"] == outs["logits"]["dtype"] == np.float32
    states = [name for name in ins if name.startswith("state_")]
    assert int8_states and set(int8_states) <= set(states)
    for name in states:
        assert ins[name]["dtype"] == outs[name]["dtype"]
        assert ins[name]["dtype"] == (np.int8 if name in int8_states else np.float32), name
        if name in int8_states:  # fed back as it came out
            assert ins[name]["quantization"] == outs[name]["quantization"], name


def test_streaming_int8_with_integer_io_feeds_its_states_back_as_integers(tiny_online, tmp_path):
    """`--streaming --integer-io`: every input and output int8 (what an NPU takes), each
    state's output of its input's scale and zero point, so the int8 states fed back as they
    came out give what the float32 path (dequantised, quantised again) gives; `actrec predict
    --stream` runs it."""
    from ai_edge_litert.interpreter import Interpreter

    from actrec.predict.stream import StreamingModel

    out = tmp_path / "io"
    export_runs(
        [tiny_online["run"]], out, model_format="tflite", streaming=True, quantize="int8",
        quantization=_options(calibration_clips=4, max_drop=100, integer_io=True),
    )  # fmt: skip
    metadata = read_export_metadata(out)
    assert metadata["integer_io"] is True and metadata["quantization"]["float_products"] is False
    runner = Interpreter(model_path=str(out / "model.tflite")).get_signature_runner()
    inputs, outputs = runner.get_input_details(), runner.get_output_details()
    states = [name for name in inputs if name.startswith("state_")]
    assert len(states) == len(metadata["streaming"]["states"]) > 0
    assert {detail["dtype"] for detail in [*inputs.values(), *outputs.values()]} == {np.int8}
    for name in states:
        assert inputs[name]["quantization"] == outputs[name]["quantization"]

    rng = np.random.default_rng(0)
    frames = rng.integers(-128, 127, (4, *inputs["frame"]["shape"][1:]), dtype=np.int8)
    fed = {name: np.full(inputs[name]["shape"], inputs[name]["quantization"][1], np.int8)
           for name in states}  # fmt: skip
    logits = []
    for frame in frames:  # the int8 states straight back in
        result = runner(frame=frame[None], **fed)
        fed = {name: result[name] for name in states}
        logits.append(result["logits"])
    scale, zero = inputs["frame"]["quantization"]
    step = TfliteRunner(out / "model.tflite")  # float32 in and out, quantised for it
    floats = {name: np.zeros(inputs[name]["shape"], np.float32) for name in states}
    for frame, expected in zip(frames, logits, strict=True):
        result = step(frame=((frame[None].astype(np.float32) - zero) * scale), **floats)
        floats = {name: result[name] for name in states}
        assert np.array_equal(result["logits"], _dequantize(expected, outputs["logits"]))
    assert np.all(np.isfinite(StreamingModel(out).step(np.full([48, 64, 3], 100, np.uint8))))


def _dequantize(values: np.ndarray, details: dict) -> np.ndarray:
    scale, zero = details["quantization"]
    return ((values.astype(np.float32) - zero) * scale).astype(np.float32)
