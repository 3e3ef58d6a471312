"""MODEL_CARD.md of an export: what the model is, what it was trained on, how well it does.

Run metrics are read defensively: RUN/run.json's "validation", and every
RUN/eval/*/results.json that `actrec eval` wrote (protocol, split, num_videos, top1, top5,
mean_class_accuracy); a missing or malformed file is left out, never an error.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

from actrec import __version__
from actrec.config.choices import CLIP_ARCHITECTURES
from actrec.export.formats.registry import export_format
from actrec.export.metadata import CLASSES_FILE
from actrec.export.quantization.accuracy_gate import gate_reading
from actrec.export.streams import ExportedStream

EVALUATION_KEYS = ("protocol", "split", "num_videos", "top1", "top5", "mean_class_accuracy")


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _fused_streams(content: dict) -> list[dict] | None:
    """A fused evaluation's streams as [{"modality", "run", "weight"}] (the run: the folder
    of the run whose scores it fused), None for one run's own evaluation."""
    streams = content.get("streams")
    if not isinstance(streams, list) or len(streams) < 2:
        return None
    fused = []
    for stream in streams:
        stream = stream if isinstance(stream, dict) else {}
        scores = Path(str(stream.get("scores", "?")))
        # RUN/eval/NAME/scores.npz -> RUN
        run = scores.parents[2] if len(scores.parents) > 2 else scores.parent
        fused.append(
            {"modality": stream.get("modality"), "run": run.name, "weight": stream.get("weight")}
        )
    return fused


def evaluation_results(run_dir: Path) -> list[dict]:
    """The results.json files `actrec eval` wrote under RUN/eval/, each reduced to
    EVALUATION_KEYS plus "folder", "path" (its resolved folder) and "fused" (a fusion's
    streams: _fused_streams); unreadable ones are skipped."""
    results = []
    for path in sorted(Path(run_dir).glob("eval/*/results.json")):
        content = _read_json(path)
        if not isinstance(content, dict):
            continue
        entry = {key: content.get(key) for key in EVALUATION_KEYS}
        entry["folder"] = path.parent.name
        entry["path"] = path.parent.resolve()
        entry["fused"] = _fused_streams(content)
        results.append(entry)
    return results


def _evaluated(stream: ExportedStream, result: dict) -> str:
    """What an evaluation row evaluated: the stream's own model, or a fusion of runs."""
    if not result["fused"]:
        return stream.modality
    parts = [
        f"{entry['modality']} `{entry['run']}` x {_number(entry['weight'])}"
        for entry in result["fused"]
    ]
    return "fusion of " + " + ".join(parts)


def dataset_facts(data_dir: Path | None) -> dict:
    """dataset, split and videos per split from a prepared folder's manifest ({} if gone)."""
    if data_dir is None:
        return {}
    manifest = _read_json(Path(data_dir) / "manifest.json")
    if not isinstance(manifest, dict):
        return {}
    splits = manifest.get("splits", {})
    return {
        "dataset": manifest.get("dataset"),
        "split": manifest.get("split"),
        "videos": {
            name: info.get("videos")
            for name, info in (splits.items() if isinstance(splits, dict) else [])
            if isinstance(info, dict)
        },
    }


def _number(value, percent: bool = False) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return "—"
    return f"{100 * value:.1f} %" if percent else f"{value:.4g}"


def _network(model) -> str:
    """ "TSM on resnet50", or a clip network's "videomae_b (videomae clip network)"."""
    if model.architecture in CLIP_ARCHITECTURES:
        return f"{model.backbone} ({model.architecture} clip network)"
    return f"{model.architecture.upper()} on {model.backbone}"


def _stream_section(stream: ExportedStream, metadata_entry: dict) -> list[str]:
    run, recipe = stream.run, stream.run.recipe
    facts = dataset_facts(run.data_dir)
    train = recipe.train
    record = run.record
    steps = "?" if record.global_step is None else record.global_step
    validation = record.validation if isinstance(record.validation, dict) else {}
    lines = [
        f"### {stream.modality.upper()} stream",
        "",
        f"- Run: `{run.run_dir.resolve()}` (recipe `{metadata_entry['recipe_file']}`)",
        f"- Network: {_network(recipe.model)}, {stream.spec.num_segments} "
        + ("frames" if recipe.model.architecture in CLIP_ARCHITECTURES else "segments")
        + (f" x {stream.spec.new_length} flow fields" if stream.modality == "flow" else "")
        + f", {stream.spec.crop_size} px centre crop of the short side resized to "
        f"{stream.spec.eval_scale_size} px, {recipe.data.sampling} sampling",
        f"- Recipe: `{recipe.name}` — {recipe.description or 'no description'}",
    ]
    if recipe.reference:
        lines.append(f"- Reference: {recipe.reference.splitlines()[0]}")
    start = record.initialised_from
    if isinstance(start, dict):
        lines.append(
            f"- Initialised from: {start.get('kind')} `{start.get('path')}` (recipe "
            f"`{start.get('recipe')}`, {start.get('architecture', '?').upper()} "
            f"{start.get('backbone')} {start.get('modality')}, {start.get('num_classes')} "
            f"classes; classifier {'kept' if start.get('keeps_classifier') else 'new'})"
        )
        if start.get("weights_license"):  # fine-tuned weights stay under the source's terms
            lines.append(
                f"- Weights' license: {start['weights_license']} (the published weights it "
                "was initialised from)"
            )
    teacher = record.distilled_from
    if isinstance(teacher, dict):
        lines.append(
            f"- Distilled from: the flow {teacher.get('kind')} `{teacher.get('path')}` (recipe "
            f"`{teacher.get('recipe')}`, {str(teacher.get('architecture', '?')).upper()} "
            f"{teacher.get('backbone')}, {teacher.get('new_length')} {teacher.get('flow')} "
            f"flow fields, SHA-256 {teacher.get('sha256')}), MARS: train.distill_weight "
            f"{train.distill_weight:g}, {_matched(train)}. The model reads "
            "RGB frames only: the teacher was used in training, not here"
        )
    converted = record.converted_from
    if isinstance(converted, dict):
        license_note = f"; license {converted['license']}" if converted.get("license") else ""
        file_kind = str(converted.get("file_format", ""))
        file_kind = file_kind if file_kind.startswith("TensorFlow") else "PyTorch"  # MoViNet's
        lines.append(
            f"- Weights: converted from the published {file_kind}"
            f" file `{converted.get('file_name')}` ({converted.get('layout')} layout, SHA-256 "
            f"{converted.get('sha256')}) by `actrec pretrained convert`; not trained by actrec"
            + license_note
        )
        if converted.get("license"):
            lines.append(f"- Weights' license: {converted['license']}")
    lines += [
        f"- Data: `{run.data_dir}`"
        + (
            f" ({facts.get('dataset')}, split {facts.get('split')}; videos per split: "
            + ", ".join(f"{name} {count}" for name, count in facts.get("videos", {}).items())
            + ")"
            if facts
            else " (no longer there)"
        ),
        f"- Training: {train.epochs} epochs, batch {train.batch_size}, {train.optimizer} "
        f"lr {train.lr} ({train.decay} decay); {steps} steps done, "
        f"status {record.status or '?'}",
        f"- Validation at the end of training: accuracy "
        f"{_number(validation.get('accuracy'), percent=True)}, loss "
        f"{_number(validation.get('loss'))}",
        "",
    ]
    return lines


def _evaluation_section(streams: Sequence[ExportedStream]) -> list[str]:
    rows, seen = [], set()
    for stream in streams:
        for result in evaluation_results(stream.run.run_dir):
            if result["path"] in seen:  # a fusion of both exported runs: listed once
                continue
            seen.add(result["path"])
            rows.append(
                f"| {_evaluated(stream, result)} | {result['protocol'] or result['folder']} | "
                f"{result['split'] or '—'} | {result['num_videos'] or '—'} | "
                f"{_number(result['top1'], True)} | {_number(result['top5'], True)} | "
                f"{_number(result['mean_class_accuracy'], True)} |"
            )
    lines = ["## Evaluation", ""]
    if not rows:
        return [*lines, "No evaluation results yet (`actrec eval RUN` writes them).", ""]
    return [
        *lines,
        "| stream | protocol | split | videos | top-1 | top-5 | mean class accuracy |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]


def _usage_section(metadata: dict) -> list[str]:
    lines = export_format(metadata["model_format"]).usage_lines(metadata)
    lines += [
        f"- `{name}`: {spec['dtype']} {spec['shape']}: {spec['description']}"
        for name, spec in metadata["inputs"].items()
    ]
    outputs = metadata["outputs"]
    if isinstance(outputs, dict):
        lines += [f"- output `{name}`: {text}" for name, text in outputs.items()]
    else:
        lines.append(f"- output: {outputs}")
    return [*lines, ""]


def _trust_section(predicts: bool) -> list[str]:
    """What is checked when this folder is loaded, and what is not."""
    if predicts:
        checked = (
            "`actrec predict` checks this folder before it runs anything of it: `actrec.json` "
            "against its schema (every file it names inside the folder, no link leading out, "
            "a recipe's `extends` inside the folder or built in). A SavedModel is not loaded "
            "by TensorFlow: actrec rebuilds its network from the recipe and reads "
            "`variables/` as data (names, shapes and dtypes checked), and `saved_model.pb` is "
            "refused if anything TensorFlow's loader would call runs an op actrec's exports "
            "never use (a TF1 saver included). A TFLite file is refused with custom or "
            "TensorFlow operators, an ONNX file with data outside the folder or an operator or "
            "domain actrec's exports never use. `--trust-model` skips these checks. Loading "
            "the model directly, as above, runs whatever the file holds: do so for a copy you "
            "made or whose author you trust."
        )
    else:
        checked = (
            "`load_segment_model` loads `model.keras` in Keras's safe mode, every actrec "
            "layer registered: Python functions stored in the file (lambdas) are refused, "
            "not run."
        )
    return [
        "## Trust",
        "",
        checked + " Not checked: what an allowed operation is asked to do (memory and "
        "time it may take).",
        "",
    ]


def _streaming_step_words(metadata: dict) -> str:
    """What a streaming export's step is, for the card's first line ("" for a clip model)."""
    streaming = metadata.get("streaming")
    if not streaming:
        return ""
    if streaming.get("logits") == "clip":
        return " of the MoViNet stream's one-frame step (its logits: the clip's so far)"
    return " of the online TSM's one-frame streaming step"


def quantization_section(metadata: dict) -> list[str]:
    """ "## Quantisation": how the model was quantised and what it cost (the accuracy gate's
    figures, actrec.export.quantization.accuracy_gate); nothing for a float32 model."""
    entry = metadata.get("quantization")
    if not entry:
        return []
    lines = ["## Quantisation", ""]
    calibration = entry.get("calibration")
    method = entry["method"] + (", integer input and output" if entry.get("integer_io") else "")
    if entry.get("float_products"):
        method += " (its matrix products, the classifier's, in float32)"
    text = f"Quantised {method}"
    if calibration:
        text += (
            f", calibrated on {calibration['clips']} {calibration['split']} clips of "
            f"`{calibration['data']}`"
        )
    lines += [text + ".", ""]
    gate = entry.get("gate")
    if gate is None:
        lines += ["Its accuracy was not measured (no held-out clips were at hand).", ""]
        return lines
    where = f"{gate['clips']} {gate['split']} clips of `{gate['data']}`"
    if gate["float_top1"] is None:
        lines.append(
            f"On {where} (no labels of the model's classes), it agrees with the float32 "
            f"model's top class on {gate['agreement']:.1%} of them."
        )
    else:
        lines.append(
            f"On {where}: top-1 {gate['float_top1']:.1%} float32, {gate['quantized_top1']:.1%} "
            f"{entry['method']}; both models' top class agrees on {gate['agreement']:.1%} of "
            "the clips."
        )
        if "verdict" in gate:  # exports before the paired bound have the figures alone
            lines += [
                "",
                f"The accuracy gate: {gate_reading(gate)}. It refuses an export only when the "
                "drop's lower bound is above the allowed drop (a loss that the clips show at "
                "that confidence), so that one or two clips near a class boundary do not "
                "decide.",
            ]
    return [*lines, ""]


def _with_article(title: str) -> str:
    return ("an " if title[0] in "AEIOU" else "a ") + title


def model_card(name: str, streams: Sequence[ExportedStream], metadata: dict) -> str:
    """MODEL_CARD.md: what the model is, what it was trained on, how well it does."""
    title = export_format(metadata["model_format"]).title
    preparation = metadata["preparation"]
    fusion = metadata["fusion_weights"]
    lines = [
        f"# Model card: {name}",
        "",
        f"Exported by actrec {__version__} as {_with_article(title)}"
        + (
            f" ({metadata['quantize']} quantisation)"
            if metadata.get("quantize", "none") != "none"
            else ""
        )
        + _streaming_step_words(metadata)
        + f"; {metadata['modality']} action recognition over {len(metadata['classes'])} "
        f"classes (listed in `{CLASSES_FILE}`).",
        "",
        "## Model",
        "",
    ]
    for stream, entry in zip(streams, metadata["streams"], strict=True):
        lines += _stream_section(stream, entry)
    if fusion:
        averaged = "softmax" if metadata.get("fusion_average") == "softmax" else "logits"
        lines += [
            f"Two-stream fusion: weighted average of the streams' {averaged} (the official "
            "TSN / TSM evaluations fuse logits), "
            + " : ".join(f"{modality} {weight:g}" for modality, weight in fusion.items())
            + ".",
            "",
        ]
    lines += [
        "## Input preparation",
        "",
        f"Videos are decoded at frame size `{preparation.get('frame_size')}`, "
        + (
            f"resampled to {preparation['fps']} frames/s"
            if preparation.get("fps")
            else "at their own frame rate"
        )
        + (
            f", with `{preparation.get('flow')}` optical flow"
            if preparation.get("flow") not in (None, "none")
            else ""
        )
        + " and JPEG round-tripped (quality "
        f"{preparation.get('jpeg_quality')}), as in training; `actrec predict` does this.",
        "",
    ]
    lines += _evaluation_section(streams)
    lines += quantization_section(metadata)
    lines += _usage_section(metadata)
    lines += _trust_section(export_format(metadata["model_format"]).predicts)
    lines += [
        "## Limitations",
        "",
        "The model knows only the classes it was trained on and the kind of video in its "
        "training data; scores on other footage are not calibrated.",
        "",
    ]
    return "\n".join(lines)


def _matched(train) -> str:
    """What a distilled run matched of its teacher (train.distill_features)."""
    if train.distill_features == "maps":
        return f"the maps of its backbone's layer {train.distill_layer} (FitNets' hints)"
    return f"{train.distill_features} features"
