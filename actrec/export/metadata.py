"""What an export folder holds beside the model (its file names and actrec.json), and
how actrec.json is read back.

    actrec.json      what the model takes and returns, its streams, classes, fusion weights
                     and the preparation settings `actrec predict` reproduces
    classes.txt      the class names, one a line (line i = class index i)
    recipe.yaml      the resolved recipe of the run (two-stream: recipe-rgb.yaml, recipe-flow.yaml)
    MODEL_CARD.md    data, recipe, training and evaluation metrics, usage
                     (actrec.export.model_card writes it)

An export may have been handed over: it is read only from inside its folder (no symlink
leading out of it, recipes that extend a built-in recipe or a file inside it:
actrec.config.confined_files).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from actrec import __version__
from actrec.config.confined_files import check_links_stay_inside
from actrec.config.files import load_folder_recipe
from actrec.errors import ConfigError
from actrec.export.metadata_schema import check_export_metadata
from actrec.runs.record import weights_license

if TYPE_CHECKING:
    from actrec.config.recipe import Recipe
    from actrec.export.streams import ExportedStream

METADATA_FILE = "actrec.json"
CLASSES_FILE = "classes.txt"
MODEL_CARD_FILE = "MODEL_CARD.md"
METADATA_FORMAT = "actrec-export"
METADATA_FORMAT_VERSION = 1
# What `actrec predict` must reproduce of the preparation (PrepareSettings fields).
PREPARATION_KEYS = ("frame_size", "fps", "jpeg_quality")
EXPORT_AGAIN = "export the model again with `actrec export` (or restore the folder)"


def recipe_file_name(modality: str, two_stream: bool) -> str:
    """recipe.yaml for one stream; recipe-rgb.yaml / recipe-flow.yaml for two."""
    return f"recipe-{modality}.yaml" if two_stream else "recipe.yaml"


def _stream_entry(stream: ExportedStream, two_stream: bool) -> dict:
    recipe, spec = stream.run.recipe, stream.spec
    published = weights_license(stream.run.record)  # a start from this export keeps it
    return {
        **({"weights_license": published} if published else {}),
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
    fusion_weights: Sequence[float] | None,
    preparation: dict,
    fusion_average: str,
    format_entries: dict,
) -> dict:
    """The content of actrec.json: what every export says, with the format's own entries
    ("model", "inputs", "outputs", "top_k", ...: ExportFormat.write's WrittenModel)."""
    two_stream = len(streams) == 2
    entries = dict(format_entries)
    metadata = {
        "format": METADATA_FORMAT,
        "format_version": METADATA_FORMAT_VERSION,
        "actrec_version": __version__,
        "model_format": model_format,
        "model": entries.pop("model"),
        "modality": "two-stream" if two_stream else streams[0].modality,
        "streams": [_stream_entry(stream, two_stream) for stream in streams],
        "inputs": entries.pop("inputs"),
        "outputs": entries.pop("outputs"),
        "top_k": entries.pop("top_k", None),
        "classes": list(classes),
        "fusion_weights": (
            {stream.modality: float(w) for stream, w in zip(streams, fusion_weights, strict=True)}
            if two_stream
            else None
        ),
        "fusion_average": fusion_average if two_stream else None,
        "preparation": preparation,
    }
    return {**metadata, **entries}


def read_export_metadata(model_dir: Path | str) -> dict:
    """actrec.json of an export folder, checked against its schema
    (actrec.export.metadata_schema), once no symlink in the folder leads out of it; its
    streams' recipes checked to read nothing outside it (`load_export_recipe`). ConfigError
    naming the folder, the file or the field otherwise."""
    model_dir = Path(model_dir)
    path = model_dir / METADATA_FILE
    if not model_dir.is_dir():
        raise ConfigError(f"{model_dir} is not a folder; give the --out folder of `actrec export`")
    check_links_stay_inside(model_dir, EXPORT_AGAIN)
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
    check_export_metadata(path, metadata)
    for stream in metadata["streams"]:
        load_export_recipe(model_dir, stream["recipe_file"])
    return metadata


def load_export_recipe(model_dir: Path | str, recipe_file: str) -> Recipe:
    """The recipe `recipe_file` (a name actrec.json gives) of the export in `model_dir`: the
    file and what its `extends` names inside the folder, or built-in
    (actrec.config.files.load_folder_recipe); ConfigError naming the file otherwise."""
    return load_folder_recipe(model_dir, recipe_file, EXPORT_AGAIN)
