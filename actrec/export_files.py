"""What an export folder holds beside the model, and how it is read back.

    actrec.json      what the model takes and returns, its streams, classes, fusion weights
                     and the preparation settings `actrec predict` reproduces
    classes.txt      the class names, one a line (line i = class index i)
    recipe.yaml      the resolved recipe of the run (two-stream: recipe-rgb.yaml, recipe-flow.yaml)
    MODEL_CARD.md    data, recipe, training and evaluation metrics, usage

Run metrics are read defensively: RUN/run.json's "validation", and every
RUN/eval/*/results.json that `actrec eval` wrote (protocol, split, num_videos, top1, top5,
mean_class_accuracy); a missing or malformed file is left out, never an error.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from actrec import __version__
from actrec.errors import ConfigError

METADATA_FILE = "actrec.json"
CLASSES_FILE = "classes.txt"
MODEL_CARD_FILE = "MODEL_CARD.md"
KERAS_MODEL_FILE = "model.keras"
METADATA_FORMAT = "actrec-export"
METADATA_FORMAT_VERSION = 1
MODEL_FORMATS = ("savedmodel", "keras")
SIGNATURE_NAME = "serving_default"
# What `actrec predict` must reproduce of the preparation (PrepareSettings fields).
PREPARATION_KEYS = ("frame_size", "fps", "jpeg_quality")
EVALUATION_KEYS = ("protocol", "split", "num_videos", "top1", "top5", "mean_class_accuracy")


@dataclass(frozen=True)
class ExportedStream:
    """One stream of an export: the run it comes from and its evaluation clips."""

    run: object  # actrec.trained_run.TrainedRun
    spec: object  # actrec.data.pipeline.ClipSpec (evaluation)

    @property
    def modality(self) -> str:
        return self.spec.modality


def recipe_file_name(modality: str, two_stream: bool) -> str:
    """recipe.yaml for one stream; recipe-rgb.yaml / recipe-flow.yaml for two."""
    return f"recipe-{modality}.yaml" if two_stream else "recipe.yaml"


def _savedmodel_inputs(streams: Sequence[ExportedStream]) -> dict:
    inputs = {}
    for stream in streams:
        if stream.modality == "rgb":
            inputs["frames"] = {
                "dtype": "uint8",
                "shape": ["N", "F", "H", "W", 3],
                "description": "all decoded RGB frames of N videos of F frames each, any "
                "resolution (resized and centre-cropped inside the model)",
            }
        else:
            inputs["flow"] = {
                "dtype": "uint8",
                "shape": ["N", "F-1", "H", "W", 2],
                "description": "optical flow between consecutive frames, x and y, quantised "
                "as `actrec prepare` stores it: round(255 * (clip(v, -20, 20) + 20) / 40), "
                "128 = no motion",
            }
    return inputs


def _savedmodel_outputs(streams: Sequence[ExportedStream], top_k: int) -> dict:
    outputs = {
        "probabilities": "float32 [N, K]: class probabilities"
        + (" (the streams' weighted fusion, see fusion_average)" if len(streams) == 2 else ""),
        "top_k_indices": f"int32 [N, {top_k}]: class indices, most probable first",
        "top_k_probabilities": f"float32 [N, {top_k}]: their probabilities",
        "top_k_classes": f"string [N, {top_k}]: their class names",
    }
    if len(streams) == 2:
        for stream in streams:
            outputs[f"{stream.modality}_probabilities"] = (
                f"float32 [N, K]: the {stream.modality} stream's softmax"
            )
    return outputs


def _keras_inputs(streams: Sequence[ExportedStream]) -> dict:
    inputs = {}
    for stream in streams:
        spec = stream.spec
        name = "frames" if len(streams) == 1 else stream.modality
        meaning = (
            "RGB 0-255"
            if stream.modality == "rgb"
            else "flow on the stored 0-255 scale (127.5 = no motion), channels [x0, y0, x1, ...]"
        )
        inputs[name] = {
            "dtype": "float32",
            "shape": ["N", spec.num_segments, spec.crop_size, spec.crop_size, spec.channels],
            "description": f"sampled, centre-cropped clips, {meaning}; no resizing or sampling "
            "inside (actrec.serving.clips_from_frames / clips_from_flow make them)",
        }
    return inputs


def _stream_entry(stream: ExportedStream, two_stream: bool) -> dict:
    recipe, spec = stream.run.recipe, stream.spec
    return {
        "modality": stream.modality,
        "input": "frames" if stream.modality == "rgb" else "flow",
        "run": str(stream.run.run_dir.resolve()),
        "weights": stream.run.weights_path.name,
        "recipe": recipe.name,
        "recipe_file": recipe_file_name(stream.modality, two_stream),
        "architecture": recipe.model.architecture,
        "backbone": recipe.model.backbone,
        "num_segments": spec.num_segments,
        "new_length": spec.new_length,
        "crop_size": spec.crop_size,
        "scale_size": spec.eval_scale_size,
        "sampling": spec.sampling,
        "frame_interval": spec.frame_interval,
    }


def export_metadata(
    streams: Sequence[ExportedStream],
    classes: Sequence[str],
    model_format: str,
    top_k: int,
    fusion_weights: Sequence[float] | None,
    preparation: dict,
    fusion_average: str = "logits",
) -> dict:
    """The content of actrec.json."""
    two_stream = len(streams) == 2
    savedmodel = model_format == "savedmodel"
    return {
        "format": METADATA_FORMAT,
        "format_version": METADATA_FORMAT_VERSION,
        "actrec_version": __version__,
        "model_format": model_format,
        "model": SIGNATURE_NAME if savedmodel else KERAS_MODEL_FILE,
        "modality": "two-stream" if two_stream else streams[0].modality,
        "streams": [_stream_entry(stream, two_stream) for stream in streams],
        "inputs": _savedmodel_inputs(streams) if savedmodel else _keras_inputs(streams),
        "outputs": (
            _savedmodel_outputs(streams, top_k)
            if savedmodel
            else (
                "float32 [N, K]: fused probabilities"
                if two_stream
                else "float32 [N, K]: logits (apply softmax)"
            )
        ),
        "top_k": top_k if savedmodel else None,
        "classes": list(classes),
        "fusion_weights": (
            {stream.modality: float(w) for stream, w in zip(streams, fusion_weights, strict=True)}
            if two_stream
            else None
        ),
        "fusion_average": fusion_average if two_stream else None,
        "preparation": preparation,
    }


def read_export_metadata(model_dir: Path | str) -> dict:
    """actrec.json of an export folder; ConfigError naming the folder otherwise."""
    model_dir = Path(model_dir)
    path = model_dir / METADATA_FILE
    if not model_dir.is_dir():
        raise ConfigError(f"{model_dir} is not a folder; give the --out folder of `actrec export`")
    try:
        metadata = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"{model_dir} has no {METADATA_FILE}: it is not an `actrec export` folder"
        ) from None
    except (OSError, ValueError) as error:
        raise ConfigError(f"{path} cannot be read ({error}); export the model again") from None
    if not isinstance(metadata, dict) or metadata.get("format") != METADATA_FORMAT:
        raise ConfigError(f"{path} is not an actrec export description; export the model again")
    if metadata.get("format_version") != METADATA_FORMAT_VERSION:
        raise ConfigError(
            f"{path} has format_version {metadata.get('format_version')!r}; this actrec reads "
            f"version {METADATA_FORMAT_VERSION}: export the model again with this version"
        )
    return metadata


# --- run facts for the model card -------------------------------------------------------------


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def evaluation_results(run_dir: Path) -> list[dict]:
    """The results.json files `actrec eval` wrote under RUN/eval/, each reduced to
    EVALUATION_KEYS plus "folder"; unreadable ones are skipped."""
    results = []
    for path in sorted(Path(run_dir).glob("eval/*/results.json")):
        content = _read_json(path)
        if not isinstance(content, dict):
            continue
        entry = {key: content.get(key) for key in EVALUATION_KEYS}
        entry["folder"] = path.parent.name
        results.append(entry)
    return results


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


def _stream_section(stream: ExportedStream, metadata_entry: dict) -> list[str]:
    run, recipe = stream.run, stream.run.recipe
    facts = dataset_facts(run.data_dir)
    train = recipe.train
    record = run.record
    validation = record.get("validation") if isinstance(record.get("validation"), dict) else {}
    lines = [
        f"### {stream.modality.upper()} stream",
        "",
        f"- Run: `{run.run_dir.resolve()}` (recipe `{metadata_entry['recipe_file']}`)",
        f"- Network: {recipe.model.architecture.upper()} on {recipe.model.backbone}, "
        f"{stream.spec.num_segments} segments"
        + (f" x {stream.spec.new_length} flow fields" if stream.modality == "flow" else "")
        + f", {stream.spec.crop_size} px centre crop of the short side resized to "
        f"{stream.spec.eval_scale_size} px, {recipe.data.sampling} sampling",
        f"- Recipe: `{recipe.name}` — {recipe.description or 'no description'}",
    ]
    if recipe.reference:
        lines.append(f"- Reference: {recipe.reference.splitlines()[0]}")
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
        f"lr {train.lr} ({train.decay} decay); {record.get('global_step', '?')} steps done, "
        f"status {record.get('status', '?')}",
        f"- Validation at the end of training: accuracy "
        f"{_number(validation.get('accuracy'), percent=True)}, loss "
        f"{_number(validation.get('loss'))}",
        "",
    ]
    return lines


def _evaluation_section(streams: Sequence[ExportedStream]) -> list[str]:
    rows = []
    for stream in streams:
        for result in evaluation_results(stream.run.run_dir):
            rows.append(
                f"| {stream.modality} | {result['protocol'] or result['folder']} | "
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
    if metadata["model_format"] == "keras":
        return [
            "## Use",
            "",
            "A Keras model of sampled, centre-cropped clips (no resizing or sampling inside); "
            "load it with actrec:",
            "",
            "```python",
            "from actrec.models.segment_model import load_segment_model",
            f'model = load_segment_model("{KERAS_MODEL_FILE}")',
            "```",
            "",
        ]
    call = ", ".join(f"{name}={name}" for name in metadata["inputs"])
    return [
        "## Use",
        "",
        "```bash",
        "actrec predict VIDEO... --model THIS_FOLDER",
        "```",
        "",
        "or, with TensorFlow only (decoded frames of any resolution; inputs below):",
        "",
        "```python",
        "import tensorflow as tf",
        'model = tf.saved_model.load("THIS_FOLDER")',
        f"outputs = model.signatures[{SIGNATURE_NAME!r}]({call})",
        'outputs["top_k_classes"], outputs["top_k_probabilities"]',
        "```",
        "",
        *[
            f"- `{name}`: {spec['dtype']} {spec['shape']}: {spec['description']}"
            for name, spec in metadata["inputs"].items()
        ],
        *[f"- output `{name}`: {text}" for name, text in metadata["outputs"].items()],
        "",
    ]


def model_card(name: str, streams: Sequence[ExportedStream], metadata: dict) -> str:
    """MODEL_CARD.md: what the model is, what it was trained on, how well it does."""
    preparation = metadata["preparation"]
    fusion = metadata["fusion_weights"]
    lines = [
        f"# Model card: {name}",
        "",
        f"Exported by actrec {__version__} as a "
        + ("TensorFlow SavedModel" if metadata["model_format"] == "savedmodel" else "Keras model")
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
    lines += _usage_section(metadata)
    lines += [
        "## Limitations",
        "",
        "The model knows only the classes it was trained on and the kind of video in its "
        "training data; scores on other footage are not calibrated.",
        "",
    ]
    return "\n".join(lines)
