"""What a quantised export needs besides its format: the data it is calibrated on (int8)
and the accuracy gate every quantised clip model passes (actrec.export.quantization.accuracy_gate).

    checked_quantization(...)   before any work: the data folder, or ConfigError naming
                                --calibration-data (int8 without data)
    calibrated_request(...)     int8: the request with its calibration clips
    gate_entry(...)             after the format wrote the model: the gate measured, printed
                                in the summary, refused (ActrecError) when its loss beyond
                                --max-drop holds at --gate-confidence;
                                actrec.json's "quantization"
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from actrec.errors import ConfigError
from actrec.export.quantization.accuracy_gate import (
    DEFAULT_CONFIDENCE,
    DEFAULT_MAX_DROP,
    GateResult,
    check_gate,
    measured_gate,
)
from actrec.export.quantization.calibration import (
    CALIBRATION_SPLITS,
    DEFAULT_CALIBRATION_CLIPS,
    DEFAULT_GATE_CLIPS,
    HELD_OUT_SPLITS,
    clip_set,
    quantization_data,
    refuse_without_data,
)
from actrec.export.quantization.streaming_step import (
    clip_run_of_step,
    float_step_run,
    state_outputs_of,
    stepped_calibration,
)
from actrec.export.ready_clips import model_function

RELOAD_MEASURE = (
    "reported only: a quantised model's outputs on random probes differ by its quantisation; "
    "it is checked by the accuracy gate on held-out clips (quantization.gate)"
)
"""actrec.json's reload_check.measure of a quantised export."""


@dataclass(frozen=True)
class QuantizationOptions:
    """calibration_clips: int8: training clips to calibrate on; calibration_data: a prepared
    folder to calibrate and gate on instead of the run's own; gate_clips: held-out clips of
    the gate; max_drop: top-1 points the gate allows; gate_confidence: the confidence at
    which a loss beyond max_drop refuses the export (actrec.export.quantization.accuracy_gate);
    integer_io: int8 TFLite with uint8 input and int8 output."""

    calibration_clips: int = DEFAULT_CALIBRATION_CLIPS
    calibration_data: Path | None = None
    gate_clips: int = DEFAULT_GATE_CLIPS
    max_drop: float = DEFAULT_MAX_DROP
    gate_confidence: float = DEFAULT_CONFIDENCE
    integer_io: bool = False


def checked_quantization(
    runs: Sequence, data_dir: Path | None, quantize: str, options
) -> Path | None:
    """The prepared folder a quantised export calibrates and gates on (None: float32, or
    float16 / dynamic without data: no gate); ConfigError for what cannot be done, before
    anything is built."""
    for name in ("calibration_clips", "gate_clips"):
        if getattr(options, name) < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be at least 1")
    if not 0 <= options.gate_confidence < 1:
        raise ConfigError("--gate-confidence must be at least 0 and below 1 (e.g. 0.95)")
    if quantize == "none":
        if options.calibration_data is not None:
            raise ConfigError("--calibration-data is for a quantised export: give --quantize")
        return None
    data = quantization_data(runs, data_dir, options.calibration_data)
    if data is None and quantize == "int8":
        raise refuse_without_data(quantize)
    return data


def calibrated_request(request, data: Path, options: QuantizationOptions):
    """`request` with its int8 calibration clips (ConfigError when `data` has none)."""
    splits = CALIBRATION_SPLITS + HELD_OUT_SPLITS
    clips = clip_set(data, splits, request.streams, request.classes, options.calibration_clips)
    if clips is None:
        raise ConfigError(f"{data} has no videos to calibrate on; give --calibration-data PREPARED")
    if request.streaming:
        function, signature, _ = model_function(request, None)
        clips = stepped_calibration(clips, function, signature)
    return replace(request, calibration=clips)


def measured_request_gate(request, written, data: Path | None, options) -> GateResult | None:
    """The gate of the written quantised model (None where it cannot be measured: no
    held-out data, a format that gives no runner). A streaming step is gated on whole
    clips, fed frame by frame (actrec.export.quantization.streaming_step)."""
    if request.quantize == "none" or data is None or written.run is None:
        return None
    splits = HELD_OUT_SPLITS if options.calibration_data is None else (*HELD_OUT_SPLITS, "train")
    clips = clip_set(data, splits, request.streams, request.classes, options.gate_clips)
    if clips is None:
        return None
    function, signature, _ = model_function(request, None)
    float_run, quantized_run = float_step_run(function, signature), written.run
    if request.streaming:
        clip_logits = (written.metadata.get("streaming") or {}).get("logits") == "clip"
        float_run = clip_run_of_step(float_run, signature, clip_logits=clip_logits)
        state_outputs = state_outputs_of(written.metadata)
        quantized_run = clip_run_of_step(quantized_run, signature, state_outputs, clip_logits)
    return measured_gate(float_run, quantized_run, clips, options.max_drop, options.gate_confidence)


def quantization_entry(request, gate: GateResult | None, out_dir) -> dict | None:
    """actrec.json's "quantization" (None for float32); ActrecError when the gate fails."""
    if request.quantize == "none":
        return None
    if gate is not None:
        check_gate(gate, request.quantize, out_dir)
    calibration = request.calibration
    return {
        "method": request.quantize,
        "integer_io": bool(request.integer_io),
        # int8 with float input and output keeps its matrix products (the classifier's)
        # float32: actrec.export.tflite_flatbuffers.FLOAT_OPS_OF_INT8,
        # actrec.export.quantization.onnx_int8
        "float_products": request.quantize == "int8" and not request.integer_io,
        "calibration": None if calibration is None else _calibration_entry(request),
        "gate": None if gate is None else gate.entry(),
    }


def _calibration_entry(request) -> dict:
    """What int8 was calibrated on: clips (a streaming step: the frames of `clips` clips,
    fed one by one with their real states)."""
    calibration = request.calibration
    entry = {"clips": calibration.count, "split": calibration.split}
    if request.streaming:
        entry["frames"] = calibration.count
        entry["clips"] = calibration.count // request.streams[0].spec.num_segments
    return {**entry, "data": str(calibration.data_dir)}
