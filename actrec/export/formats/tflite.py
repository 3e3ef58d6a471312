"""`--format tflite [--quantize none|float16|dynamic|int8]`: model.tflite for phones and small
devices, in actrec.export.ready_clips' layout at batch 1 (normalisation inside, sampling and
crop outside), clip models (one stream or fused) and the online TSM's streaming step alike.
Written by TensorFlow's converter (actrec.export.tflite_flatbuffers), checked against the in-process
model (float32 within 1e-4; a quantised model's difference is reported, its accuracy gated:
actrec.export.quantization.accuracy_gate), run by LiteRT where it is installed, else by TensorFlow's
interpreter. int8 is full-integer, calibrated on request.calibration."""

from __future__ import annotations

from pathlib import Path

from actrec.errors import ActrecError
from actrec.export.formats.registry import (
    ExportFormat,
    ExportRequest,
    FormatOption,
    WrittenModel,
    predict_usage_lines,
)
from actrec.export.quantization.calibration import representative_inputs
from actrec.export.quantization.tflite_int8_states import with_int8_states
from actrec.export.ready_clips import (
    ReadyClipModel,
    ReadyFrameStep,
    model_function,
    probe_difference,
    ready_clip_entries,
)
from actrec.export.tflite_flatbuffers import (
    FLOAT_TOLERANCE,
    INTERPRETERS,
    QUANTIZATIONS,
    TFLITE_FILE,
    TfliteRunner,
    converted,
    states_changing_scale,
)
from actrec.export.trust.tflite_checks import check_tflite_file
from actrec.files.atomic import write_bytes_atomic

BATCH = 1


def _check_state_scales(runner: TfliteRunner, signature) -> None:
    """ActrecError (nothing written) when an integer-I/O step's state would not come back
    as its next input reads it."""
    names = [spec.name for spec in signature if spec.name.startswith("state_")]
    changing = states_changing_scale(runner, names)
    if changing:
        raise ActrecError(
            f"the int8 streaming step's states {', '.join(changing)} come out in another "
            "type or scale than they go in, so they cannot be fed back as integers; nothing "
            "was written. Export without --integer-io (float32 states), and please report this"
        )


def _describe_int8_states(metadata: dict, runner: TfliteRunner, names: list[str]) -> None:
    """actrec.json's inputs and streaming states say which states are int8, with their
    scale and zero point (a zero state is its zero point)."""
    for name in names:
        scale, zero_point = runner.input_details[name]["quantization"]
        quantization = {"scale": float(scale), "zero_point": int(zero_point)}
        entry = metadata["inputs"][name]
        entry.update(dtype="int8", quantization=quantization)
        entry["description"] = (
            f"int8, value = (q - {int(zero_point)}) x {float(scale):.6g}; to start, every "
            f"element {int(zero_point)} (a zero state); feed back the output of the same name"
        )
        for state in metadata.get("streaming", {}).get("states", []):
            if state.get("input") == name:
                state.update(dtype="int8", quantization=quantization)


class TfliteFormat(ExportFormat):
    name = "tflite"
    title = "TFLite model"
    summary = (
        "model.tflite for phones and devices (sampled, cropped clips in, normalisation "
        "inside; layout in actrec.json)"
    )
    quantizations = QUANTIZATIONS
    quantize_help = (
        "float16 weights (half the file), dynamic: int8 weights (a quarter), or int8: "
        "full-integer, calibrated (--calibration-clips, --integer-io)"
    )
    integer_io = True
    runtime_options = (
        FormatOption(
            "interpreter",
            "LiteRT (ai-edge-litert) or TensorFlow's interpreter (auto: LiteRT where installed)",
            choices=INTERPRETERS,
            default="auto",
        ),
    )

    def write(self, request: ExportRequest, folder: Path) -> WrittenModel:
        function, signature, state_shapes = model_function(request, BATCH)
        representative = None
        if request.quantize == "int8":
            names = [spec.name for spec in signature]
            representative = representative_inputs(request.calibration, names)
        flatbuffer = converted(
            function,
            signature,
            request.models,
            request.quantize,
            representative,
            request.integer_io,
            integer_input="int8" if request.streaming else "uint8",
        )
        int8_states = []
        if request.streaming and request.quantize == "int8" and not request.integer_io:
            flatbuffer, int8_states = with_int8_states(
                flatbuffer, [spec.name for spec in signature if spec.name.startswith("state_")]
            )
        runner = TfliteRunner(content=flatbuffer)
        if request.streaming and request.integer_io:
            _check_state_scales(runner, signature)
        write_bytes_atomic(folder / TFLITE_FILE, flatbuffer)
        output = "logits" if request.streaming or not request.two_stream else "probabilities"
        difference = probe_difference(function, signature, runner.run, output)
        metadata = {
            "model": TFLITE_FILE,
            "quantize": request.quantize,
            "integer_io": bool(request.integer_io),
            **({"int8_states": int8_states} if int8_states else {}),
            "top_k": None,
            **ready_clip_entries(request, state_shapes, BATCH),
        }
        _describe_int8_states(metadata, runner, int8_states)
        tolerance = FLOAT_TOLERANCE if request.quantize == "none" else None
        return WrittenModel(difference, tolerance, metadata, run=runner.run)

    def usage_lines(self, metadata: dict) -> list[str]:
        streaming = bool(metadata.get("streaming"))
        names = ", ".join(f"{name}={name}" for name in metadata["inputs"])
        return [
            *predict_usage_lines(metadata),
            "or with LiteRT (`pip install ai-edge-litert`) on "
            + (
                "one resized, centre-cropped frame at a time, the states fed back"
                if streaming
                else "sampled, centre-cropped clips"
            )
            + (
                " (integer inputs and outputs: each of the type, scale and zero point "
                "`runner.get_input_details()` gives; the normalisation is inside; inputs "
                "below):"
                if metadata.get("integer_io")
                else " (float32 0-255; the normalisation is inside; inputs below"
                + (
                    f"; the states {', '.join(metadata['int8_states'])} are int8 in and out, "
                    "starting at their zero point (actrec.json), the others float32: feed "
                    "each back as the step gave it)"
                    if metadata.get("int8_states")
                    else ")"
                )
                + ":"
            ),
            "",
            "```python",
            "from ai_edge_litert.interpreter import Interpreter",
            f'runner = Interpreter(model_path="THIS_FOLDER/{TFLITE_FILE}").get_signature_runner()',
            f"outputs = runner({names})",
            'outputs["logits"], outputs["state_00"]' if streaming else 'outputs["probabilities"]',
            "```",
            "",
        ]

    def check_untrusted(self, model_dir: Path, metadata: dict) -> None:
        check_tflite_file(model_dir / TFLITE_FILE)

    def clip_model(self, model_dir: Path, metadata: dict, trusted: bool = False, **options):
        runner = TfliteRunner(
            model_dir / TFLITE_FILE, interpreter=options.get("interpreter", "auto")
        )
        return ReadyClipModel(runner.run, model_dir, metadata)

    def stream_model(self, model_dir: Path, metadata: dict, trusted: bool = False, **options):
        runner = TfliteRunner(
            model_dir / TFLITE_FILE, interpreter=options.get("interpreter", "auto")
        )
        return ReadyFrameStep(runner.run, model_dir, metadata)


FORMAT = TfliteFormat()
