"""What an export folder holds beside the model (its file names and actrec.json), and
how actrec.json is read back.

    actrec.json      what the model takes and returns, its streams, classes, fusion weights
                     and the preparation settings `actrec predict` reproduces
    classes.txt      the class names, one a line (line i = class index i)
    recipe.yaml      the resolved recipe of the run (two-stream: recipe-rgb.yaml, recipe-flow.yaml)
    MODEL_CARD.md    data, recipe, training and evaluation metrics, usage
                     (actrec.export.model_card writes it)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from actrec import __version__
from actrec.errors import ConfigError

if TYPE_CHECKING:
    from actrec.data.input.clip_spec import ClipSpec
    from actrec.runs.trained import TrainedRun

METADATA_FILE = "actrec.json"
CLASSES_FILE = "classes.txt"
MODEL_CARD_FILE = "MODEL_CARD.md"
KERAS_MODEL_FILE = "model.keras"
METADATA_FORMAT = "actrec-export"
METADATA_FORMAT_VERSION = 1
MODEL_FORMATS = ("savedmodel", "keras", "tflite")
SIGNATURE_NAME = "serving_default"
# What `actrec predict` must reproduce of the preparation (PrepareSettings fields).
PREPARATION_KEYS = ("frame_size", "fps", "jpeg_quality")


@dataclass(frozen=True)
class ExportedStream:
    """One stream of an export: the run it comes from and its evaluation clips."""

    run: TrainedRun
    spec: ClipSpec  # the evaluation clip

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
            "inside (actrec.export.serving.clips_from_frames / clips_from_flow make them)",
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
