"""The schema of an export's actrec.json, checked whenever it is read.

actrec.json comes with an export a user may have been handed: nothing it says is used
before it is checked here. Every field `predict`, `--init-from`, `--distill-from` and the
quickstart read has its type and range, and every file it names (the recipes; a format's
model file) is a plain name inside the folder: "../../outside.yaml" or an absolute path is
refused, so an export can only point at its own files. A problem is one ConfigError naming
the file, the field and the fix.

Written out rather than with jsonschema (not one of actrec's dependencies): each rule's
message says what the field means and what to do.
"""

from __future__ import annotations

import math
from pathlib import Path, PurePosixPath, PureWindowsPath

from actrec.errors import ConfigError
from actrec.export.quantization.accuracy_gate import VERDICTS

MODALITIES = ("rgb", "flow")
EXPORT_MODALITIES = (*MODALITIES, "two-stream")
FUSION_AVERAGES = ("logits", "softmax")
STREAM_INTEGERS = ("num_segments", "new_length", "crop_size", "scale_size")


class _FieldError(Exception):
    """One field that does not fit: where (a dotted path) and what it should be."""

    def __init__(self, where: str, expected: str):
        super().__init__(where, expected)
        self.where, self.expected = where, expected


def _plain_name(value, where: str) -> str:
    """A file name inside the folder: no folder part, not hidden, not '.' or '..'."""
    if not isinstance(value, str) or not value:
        raise _FieldError(where, "a file name")
    if (
        len(PurePosixPath(value).parts) != 1
        or len(PureWindowsPath(value).parts) != 1
        or value in (".", "..")
        or value.startswith(".")
        or "\x00" in value
    ):
        raise _FieldError(where, f"a plain file name inside the export folder, not {value!r}")
    return value


def _integer(value, where: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _FieldError(where, f"a whole number >= {minimum}")
    return value


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _FieldError(where, "a finite number")
    return value


def _one_of(value, where: str, choices) -> str:
    if value not in choices:
        raise _FieldError(where, "one of " + ", ".join(map(str, choices)))
    return value


def _mapping(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise _FieldError(where, "a JSON object")
    return value


def _shape(value, where: str) -> list:
    if not isinstance(value, list) or not value:
        raise _FieldError(where, "a list of sizes")
    for index, size in enumerate(value):
        if not isinstance(size, str):
            _integer(size, f"{where}[{index}]")
    return value


def _check_streams(metadata: dict) -> None:
    streams = metadata.get("streams")
    if not isinstance(streams, list) or len(streams) not in (1, 2):
        raise _FieldError("streams", "a list of one or two streams")
    for index, stream in enumerate(streams):
        where = f"streams[{index}]"
        _mapping(stream, where)
        _one_of(stream.get("modality"), f"{where}.modality", MODALITIES)
        _plain_name(stream.get("recipe_file"), f"{where}.recipe_file")
        for name in STREAM_INTEGERS:
            _integer(stream.get(name), f"{where}.{name}")
        for name in ("run", "recipe", "backbone", "architecture", "weights_license"):
            if name in stream and not isinstance(stream[name], str):
                raise _FieldError(f"{where}.{name}", "a string")
    modalities = [stream["modality"] for stream in streams]
    if len(set(modalities)) != len(modalities):
        raise _FieldError("streams", "one RGB and one flow stream, not two of one modality")
    expected = modalities[0] if len(streams) == 1 else "two-stream"
    if metadata.get("modality") != expected:
        raise _FieldError("modality", f"{expected!r}, as its streams say")


def _check_classes(metadata: dict) -> None:
    classes = metadata.get("classes")
    if not isinstance(classes, list) or not classes:
        raise _FieldError("classes", "a non-empty list of class names")
    for index, name in enumerate(classes):
        if not isinstance(name, str) or not name:
            raise _FieldError(f"classes[{index}]", "a class name (a non-empty string)")
    if len(set(classes)) != len(classes):
        raise _FieldError("classes", "distinct class names")
    top_k = metadata.get("top_k")
    if top_k is not None:
        _integer(top_k, "top_k")


def _check_inputs(metadata: dict) -> None:
    inputs = _mapping(metadata.get("inputs"), "inputs")
    if not inputs:
        raise _FieldError("inputs", "at least one input")
    for name, spec in inputs.items():
        where = f"inputs.{name}"
        _mapping(spec, where)
        if not isinstance(spec.get("dtype"), str):
            raise _FieldError(f"{where}.dtype", "a dtype name")
        _shape(spec.get("shape"), f"{where}.shape")
    outputs = metadata.get("outputs")
    if not isinstance(outputs, dict | str):
        raise _FieldError("outputs", "a JSON object or a description")


def _check_fusion(metadata: dict) -> None:
    weights, average = metadata.get("fusion_weights"), metadata.get("fusion_average")
    if len(metadata["streams"]) == 1:
        if weights is not None or average is not None:
            raise _FieldError("fusion_weights", "null for one stream")
        return
    _mapping(weights, "fusion_weights")
    if sorted(weights) != sorted(MODALITIES):
        raise _FieldError("fusion_weights", "a weight for rgb and one for flow")
    for modality, weight in weights.items():
        _number(weight, f"fusion_weights.{modality}")
    _one_of(average, "fusion_average", FUSION_AVERAGES)


def _check_preparation(metadata: dict) -> None:
    preparation = _mapping(metadata.get("preparation"), "preparation")
    for name in ("frame_size", "flow"):
        if name in preparation and not isinstance(preparation[name], str):
            raise _FieldError(f"preparation.{name}", "a string")
    if preparation.get("fps") is not None:
        _number(preparation["fps"], "preparation.fps")
        if preparation["fps"] <= 0:
            raise _FieldError("preparation.fps", "a positive number or null")
    if "jpeg_quality" in preparation:
        quality = _integer(preparation["jpeg_quality"], "preparation.jpeg_quality")
        if quality > 100:
            raise _FieldError("preparation.jpeg_quality", "a whole number from 1 to 100")


def _check_reload_check(metadata: dict) -> None:
    """reload_check (exports written since issue 55; absent in older ones): the measured
    difference and the tolerance it met, each a number >= 0 or null, and what they measure."""
    if "reload_check" not in metadata:
        return
    check = _mapping(metadata["reload_check"], "reload_check")
    for name in ("difference", "tolerance"):
        if check.get(name) is not None and _number(check[name], f"reload_check.{name}") < 0:
            raise _FieldError(f"reload_check.{name}", "a number >= 0 or null")
    if not isinstance(check.get("measure"), str):
        raise _FieldError("reload_check.measure", "a string")


def _share(value, where: str, allow_none: bool = False):
    if value is None and allow_none:
        return value
    if _number(value, where) < 0 or value > 1:
        raise _FieldError(where, "a share from 0 to 1" + (" or null" if allow_none else ""))
    return value


def _check_quantization(metadata: dict) -> None:
    """quantization (quantised exports since issue 55): the method, the calibration clips
    (int8) and the accuracy gate's figures (null where not measured)."""
    if metadata.get("quantization") is None:
        return
    entry = _mapping(metadata["quantization"], "quantization")
    if not isinstance(entry.get("method"), str):
        raise _FieldError("quantization.method", "a quantisation name")
    if entry.get("calibration") is not None:
        calibration = _mapping(entry["calibration"], "quantization.calibration")
        _integer(calibration.get("clips"), "quantization.calibration.clips")
    if entry.get("gate") is None:
        return
    gate = _mapping(entry["gate"], "quantization.gate")
    _integer(gate.get("clips"), "quantization.gate.clips")
    _share(gate.get("agreement"), "quantization.gate.agreement")
    for name in ("float_top1", "quantized_top1"):
        _share(gate.get(name), f"quantization.gate.{name}", allow_none=True)
    _number(gate.get("max_drop"), "quantization.gate.max_drop")
    if "verdict" not in gate:  # exports before the paired bound (issue 64) have no more
        return
    if gate["verdict"] not in VERDICTS:
        raise _FieldError("quantization.gate.verdict", f"one of {', '.join(VERDICTS)}")
    _integer(gate.get("changed"), "quantization.gate.changed", minimum=0)
    if gate["verdict"] == "unlabelled":
        return
    for name in ("lost", "gained"):
        _integer(gate.get(name), f"quantization.gate.{name}", minimum=0)
    _share(gate.get("confidence"), "quantization.gate.confidence")
    for name in ("drop", "drop_lower", "drop_upper"):
        _number(gate.get(name), f"quantization.gate.{name}")


def _check_streaming(metadata: dict) -> None:
    streaming = metadata.get("streaming")
    if streaming in (None, False):
        return
    _mapping(streaming, "streaming")
    states = streaming.get("states")
    if not isinstance(states, list):
        raise _FieldError("streaming.states", "a list of states")
    for index, state in enumerate(states):
        where = f"streaming.states[{index}]"
        _mapping(state, where)
        if not isinstance(state.get("input"), str):
            raise _FieldError(f"{where}.input", "an input name")
        if not isinstance(state.get("output", ""), str):
            raise _FieldError(f"{where}.output", "an output name")
        _shape(state.get("shape"), f"{where}.shape")
    _integer(streaming.get("num_segments"), "streaming.num_segments")
    _one_of(streaming.get("logits", "segment"), "streaming.logits", ("segment", "clip"))
    if streaming.get("frames_per_step") is not None:
        _integer(streaming["frames_per_step"], "streaming.frames_per_step")


READ_BACK_FIX = (
    "this is not an export actrec wrote as it is: export the model again (or restore the file)"
)


def check_export_metadata(path: Path, metadata: dict, fix: str = READ_BACK_FIX) -> None:
    """ConfigError naming `path` (actrec.json), the field and `fix` for the first field that
    does not fit the schema (see the module). `actrec export` checks what it writes with
    it too: an export `predict` would refuse is never written."""
    try:
        # model_format is checked against the registry by format_of_export
        if not isinstance(metadata.get("model"), str) or not metadata["model"]:
            raise _FieldError("model", "a model file or signature name")
        if "." in metadata["model"]:  # a file (model.tflite); a signature name has no dot
            _plain_name(metadata["model"], "model")
        _check_streams(metadata)
        _check_classes(metadata)
        _check_inputs(metadata)
        _check_fusion(metadata)
        _check_preparation(metadata)
        _check_streaming(metadata)
        _check_reload_check(metadata)
        _check_quantization(metadata)
    except _FieldError as problem:
        raise _refusal(path, metadata, problem, fix) from None


def check_class_names(path: Path, classes, fix: str) -> None:
    """ConfigError naming `path`, the field and `fix` when `classes` break the schema's rule
    for actrec.json's classes (a non-empty list of distinct, non-empty names): `actrec
    export` refuses a run by it before building anything."""
    metadata = {"classes": classes}
    try:
        _check_classes(metadata)
    except _FieldError as problem:
        raise _refusal(path, metadata, problem, fix) from None


def _refusal(path: Path, metadata: dict, problem: _FieldError, fix: str) -> ConfigError:
    found = _shown(metadata, problem.where)
    return ConfigError(
        f"{path}: field {problem.where!r} should be {problem.expected}, not {found}; {fix}"
    )


def _shown(metadata: dict, where: str) -> str:
    """The value at a dotted path (with [i] indices), shown briefly; 'missing' if absent."""
    value = metadata
    for part in where.replace("[", ".").replace("]", "").split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return "missing"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
