"""Export trained runs as one self-contained model folder (docs/architecture.md §6).

    export_runs([RUN], OUT)             one stream (RGB or flow)
    export_runs([RUN_RGB, RUN_FLOW], OUT)  two-stream, fused (RGB 1 : flow 1.5 by default)

The model is written by its format (actrec.export.formats: savedmodel by default, keras,
tflite, onnx), which reloads it and checks it against the in-process model before it is put
in place. Beside the model: actrec.json, classes.txt, the recipe(s)
(actrec.export.metadata) and MODEL_CARD.md (actrec.export.model_card). The folder is written under a
temporary sibling name and renamed when complete; an existing non-empty OUT is refused
unless `overwrite`, and then only if it is an export.
"""

from __future__ import annotations

import math
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from actrec.errors import ActrecError
from actrec.export.checks import check_out_dir, checked_options, export_preparation, ordered_runs
from actrec.export.formats.registry import DEFAULT_FORMAT, ExportRequest, export_format
from actrec.export.metadata import (
    CLASSES_FILE,
    METADATA_FILE,
    MODEL_CARD_FILE,
    export_metadata,
    recipe_file_name,
)
from actrec.export.metadata_schema import check_export_metadata
from actrec.export.model_card import model_card
from actrec.export.parity import MEASURE
from actrec.export.quantization.accuracy_gate import GateResult
from actrec.export.quantization.quantized_export import (
    RELOAD_MEASURE,
    QuantizationOptions,
    calibrated_request,
    checked_quantization,
    measured_request_gate,
    quantization_entry,
)
from actrec.export.streaming_export import check_streamable
from actrec.export.streams import ExportedStream
from actrec.files.atomic import fsync_directory, fsync_file, write_json_atomic, write_text_atomic
from actrec.models.score_fusion import check_average
from actrec.progress import NullProgress, Progress
from actrec.runs.folder import RECIPE_FILE
from actrec.runs.trained import build_trained_model, load_trained_run

DEFAULT_TOP_K = 5
WRITE_FIX = (
    "actrec wrote what it would refuse to read (nothing was written); please report this "
    "with the run's run.json"
)


@dataclass(frozen=True)
class ExportSummary:
    """What `export_runs` wrote.

    reload_difference: the reloaded model's outputs against the in-process model's on random
        probe inputs, scaled by the logits' size (actrec.export.parity.MEASURE; within the
        format's tolerance, else the export failed); actrec.json's reload_check says it.
    reloaded_in_fresh_process: whether the reloaded model ran in a new Python process (the
        model card's own code, for the formats that load with actrec) or in this one.
    gate: a quantised model's accuracy gate (actrec.export.quantization.accuracy_gate; None when
        not measured).
    """

    out_dir: Path
    model_format: str
    modalities: tuple[str, ...]
    classes: tuple[str, ...]
    reload_difference: float
    seconds: float
    reloaded_in_fresh_process: bool = False
    gate: GateResult | None = None
    architecture: str = ""
    """The first run's model.architecture (tsn, tsm, movinet, videomae)."""


# --- the folder ------------------------------------------------------------------------------


def _staging_dir(out_dir: Path) -> Path:
    return out_dir.parent / f".{out_dir.name}.exporting-{os.getpid()}"


def _commit(staging: Path, out_dir: Path) -> None:
    """Put the complete `staging` folder at `out_dir` (replacing what is there)."""
    for path in staging.rglob("*"):
        if path.is_file():
            fsync_file(path)
    replaced = None
    if out_dir.exists():
        replaced = out_dir.parent / f".{out_dir.name}.replaced-{os.getpid()}"
        os.replace(out_dir, replaced)
    os.replace(staging, out_dir)
    fsync_directory(out_dir.parent)
    if replaced is not None:
        shutil.rmtree(replaced, ignore_errors=True)


def _write_beside(folder: Path, name: str, streams, metadata: dict) -> None:
    write_json_atomic(folder / METADATA_FILE, metadata)
    write_text_atomic(folder / CLASSES_FILE, "".join(f"{name}\n" for name in metadata["classes"]))
    two_stream = len(streams) == 2
    for stream in streams:
        text = (stream.run.run_dir / RECIPE_FILE).read_text(encoding="utf-8")
        write_text_atomic(folder / recipe_file_name(stream.modality, two_stream), text)
    write_text_atomic(folder / MODEL_CARD_FILE, model_card(name, streams, metadata))


def export_runs(
    run_dirs: Sequence[Path | str],
    out_dir: Path | str,
    *,
    model_format: str = DEFAULT_FORMAT,
    fusion_weights: Sequence[float] = (1.0, 1.5),
    fusion_average: str = "logits",
    top_k: int = DEFAULT_TOP_K,
    overwrite: bool = False,
    data_dir: Path | str | None = None,
    progress: Progress | None = None,
    checkpoint: str = "final",
    streaming: bool = False,
    quantize: str = "none",
    quantization: QuantizationOptions | None = None,
    **format_options,
) -> ExportSummary:
    """Export one run, or an RGB and a flow run fused, into `out_dir`.

    run_dirs: finished `actrec train` run directories, in any order.
    fusion_weights: (RGB, flow) weights of the two-stream fusion.
    fusion_average: "logits" (the official evaluations' fusion, as `actrec eval` does by
        default) or "softmax": what the two-stream fusion averages.
    top_k: k of the top-k outputs (at most the number of classes).
    data_dir: the prepared folder the runs trained on, when it has moved since (its
        preparation settings are recorded for `actrec predict`).
    checkpoint: "final" (final.weights.h5) or "best" (best.weights.h5) of every run.
    streaming: export one online TSM run as a one-frame-in, state-in-and-out SavedModel
        (actrec.export.streaming_export) instead of the clip model.
    quantize: "none" (float32) or a quantisation the format honours (tflite: "float16",
        "dynamic" int8 weights, "int8" full-integer; onnx: "int8"); a quantised model's
        difference is reported in ExportSummary.reload_difference, not checked: its accuracy
        gate is its check.
    quantization: calibration and gate settings of a quantised export
        (actrec.export.quantization.quantized_export; int8 without data is refused before
        anything is built; a gate that fails raises ActrecError with both top-1s, nothing written).
    format_options: the format's own options (ExportFormat.options; onnx: opset=13..18),
        refused by a format that does not take them.
    Raises ConfigError / DatasetError for unusable runs, OutputError for an unusable
    out_dir, ActrecError when the reloaded export does not reproduce the model; nothing is
    left at out_dir then.
    """
    # OpenCV: lazily, `actrec export`'s argument refusals come before OpenCV
    from actrec.data.input.clip_spec import clip_spec

    started = time.monotonic()
    progress = progress or NullProgress()
    quantization = quantization or QuantizationOptions()

    weights = checked_options(top_k, fusion_weights)
    exporter = export_format(model_format)
    check_average(fusion_average)
    out_dir = Path(out_dir)
    check_out_dir(out_dir, overwrite)
    runs = ordered_runs([load_trained_run(path, checkpoint) for path in run_dirs])
    if streaming:
        check_streamable(runs)
    streams = [ExportedStream(clip_spec(run.recipe, training=False), run=run) for run in runs]
    classes = runs[0].classes
    request = ExportRequest(
        streams,
        classes,
        min(top_k, len(classes)),
        weights,
        fusion_average,
        streaming,
        quantize,
        {name: value for name, value in format_options.items() if value is not None},
        integer_io=quantization.integer_io,
    )
    exporter.check_request(request)
    data = None if data_dir is None else Path(data_dir)
    quantization_data = checked_quantization(runs, data, quantize, quantization)
    preparation = export_preparation(runs, data)

    progress.start("export", 3)
    streams = [
        ExportedStream(stream.spec, build_trained_model(stream.run), stream.run)
        for stream in streams
    ]
    request = replace(request, streams=streams)
    if quantize == "int8":
        request = calibrated_request(request, quantization_data, quantization)
    progress.advance()
    staging = _staging_dir(out_dir)
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        written = exporter.write(request, staging)
        progress.advance()
        if written.tolerance is not None and not written.difference <= written.tolerance:
            raise ActrecError(
                f"the reloaded export does not reproduce the model: its outputs differ by "
                f"{written.difference:.3g} of the logits' size (tolerance "
                f"{written.tolerance}; {MEASURE}); nothing was written to {out_dir}. Please "
                "report this with the run's recipe."
            )
        gate = measured_request_gate(request, written, quantization_data, quantization)
        entry = quantization_entry(request, gate, out_dir)
        metadata = export_metadata(
            streams, classes, exporter.name, weights, preparation, fusion_average, written.metadata
        )
        metadata["reload_check"] = {
            "difference": written.difference if math.isfinite(written.difference) else None,
            "tolerance": written.tolerance,
            "measure": MEASURE if quantize == "none" else RELOAD_MEASURE,
        }
        if entry is not None:
            metadata["quantization"] = entry
        check_export_metadata(out_dir / METADATA_FILE, metadata, WRITE_FIX)  # as predict will
        _write_beside(staging, out_dir.name, streams, metadata)
        _commit(staging, out_dir)
        progress.advance()
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        progress.finish()
    difference = written.difference
    return ExportSummary(
        out_dir=out_dir,
        model_format=model_format,
        modalities=tuple(run.modality for run in runs),
        classes=tuple(classes),
        reload_difference=difference,
        seconds=time.monotonic() - started,
        reloaded_in_fresh_process=written.fresh_process,
        gate=gate,
        architecture=runs[0].recipe.model.architecture,
    )
