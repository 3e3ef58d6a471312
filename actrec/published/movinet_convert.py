"""`actrec pretrained convert` for MoViNet: a Model Garden checkpoint (`ckpt-N.index` /
`.data-*`, or its folder) or a TF Hub SavedModel folder -> a finished actrec run folder.

    FILE  --read as data-->  variables by name (actrec.backbones.movinet.checkpoint_files:
                             tf.train.load_checkpoint and the object graph, nothing executed)
          --mapped-->  size (A0-A5), layout ((2+1)D: the stream, 3D: the base), classes
          -->  OUT/recipe.yaml (model.architecture movinet), OUT/run.json, OUT/final.weights.h5

The classes are the source's Kinetics-600 list in its logits' order (the Model Garden's
label map) unless --classes names another; run.json records the file, its SHA-256 (of the
.index and .data files in name order), the layout and the source's license (Apache-2.0),
which the model card states. The folder appears whole or not at all.
"""

from __future__ import annotations

import hashlib
import importlib
import shutil
from dataclasses import replace
from pathlib import Path

from actrec import __version__
from actrec.backbones.registry import clip_family
from actrec.config.files import dump_recipe, load_recipe
from actrec.config.overrides import with_settings
from actrec.config.validate import validate_recipe
from actrec.errors import ConfigError, OutputError
from actrec.files.output_paths import (
    create_parents,
    refuse_a_file_on_the_way,
    remove_created_parents,
)
from actrec.published.class_lists import resolve_class_names
from actrec.runs.folder import FINAL_WEIGHTS_FILE, RECIPE_FILE
from actrec.runs.record import RunRecord, write_run_record

ARCHITECTURE = "movinet"
RECORD_KEY = "converted_from"
SOURCE = "TensorFlow Model Garden MoViNet (official/projects/movinet)"
CLASSES = "kinetics600"
KINETICS_FPS = 25
"""Kinetics videos' frame rate: a MoViNet at 5 fps takes every 5th frame."""


def _family_module(name: str):
    """The MoViNet family's module `name` (checkpoint_files, convert), found through the
    registry as the factory finds a clip family's build.py: no file outside the family's
    folder names its modules."""
    return importlib.import_module(f"actrec.backbones.{clip_family(ARCHITECTURE).name}.{name}")


def is_movinet_file(path: Path | str) -> bool:
    """Whether `path` is a TensorFlow checkpoint or SavedModel (what this converter takes),
    from its names alone."""
    path = Path(path)
    if path.is_dir():
        return any(
            (path / name).exists() for name in ("saved_model.pb", "variables.index", "checkpoint")
        ) or any(path.glob("*.index"))
    return path.name.endswith(".index") or ".data-" in path.name or Path(f"{path}.index").is_file()


def _sha256(prefix: Path) -> str:
    digest = hashlib.sha256()
    for file in sorted(prefix.parent.glob(prefix.name + ".*")):
        if file.name.endswith(".index") or ".data-" in file.name:
            digest.update(file.read_bytes())
    return digest.hexdigest()


def convert_movinet_file(path: Path | str, out: Path | str, classes: str | None = None):
    """Converts the MoViNet file at `path` into the run folder `out` (which must not
    exist); returns actrec.published.convert.Conversion. Errors name the file or tensor and
    the fix, and leave nothing behind."""
    # the PyTorch converter's result and its preparation of a source's videos
    from actrec.published.convert import Conversion, source_prepare_settings

    source, out = Path(path), Path(out)
    if out.exists():
        raise OutputError(f"{out} already exists; give a new --out folder (nothing was written)")
    refuse_a_file_on_the_way(out, "--out")
    files, convert = _family_module("checkpoint_files"), _family_module("convert")
    prefix, kind = files.checkpoint_prefix(source)
    weights = convert.source_weights(files.read_movinet_variables(source), source)
    if not weights.num_classes:
        raise ConfigError(
            f"{source}: a MoViNet backbone without its classifier; a run needs one: give the "
            "classifier's checkpoint (model/... keys) or a TF Hub classification SavedModel"
        )
    names = resolve_class_names(classes or CLASSES, weights.num_classes)
    classes_from = classes or CLASSES
    network_name = weights.spec.name + ("_stream" if weights.settings.causal else "")
    recipe = _recipe(source, weights, network_name)
    record = {
        "actrec": __version__,
        "data": None,
        "classes": list(names),
        "num_classes": len(names),
        "status": "finished",
        "prepare_settings": source_prepare_settings(None, "rgb"),
        RECORD_KEY: {
            "file": str(source.resolve()),
            "file_name": source.name,
            "sha256": _sha256(prefix),
            "file_format": f"TensorFlow {kind}",
            "layout": f"Model Garden MoViNet ({weights.layout})",
            "source": SOURCE,
            "license": convert.SOURCE_LICENSE,
            "classes": classes_from,
            "settings": {
                "backbone": {"value": network_name, "from": "tensors"},
                "conv_type": {"value": weights.settings.conv_type, "from": "tensors"},
                "se_type": {"value": weights.settings.se_type, "from": "tensors"},
                "causal": {"value": weights.settings.causal, "from": "layout"},
                "activation": {"value": weights.settings.activation, "from": "layout"},
            },
        },
    }
    _write_run(out, recipe, names, record, weights, convert.assign_weights)
    notes = (f"license: {convert.SOURCE_LICENSE} ({SOURCE}); the model card states it",)
    return Conversion(out, recipe, tuple(names), record, notes)


def _recipe(source: Path, weights, network_name: str):
    spec = weights.spec
    recipe = with_settings(
        load_recipe("synthetic-rgb"),
        {
            "model.architecture": ARCHITECTURE,
            "model.backbone": network_name,
            "model.weights": "none",
            "data.num_segments": spec.frames,
            "data.crop_size": spec.image_size,
            "data.scale_size": spec.image_size,
            "data.sampling": "dense",
            "data.frame_interval": max(1, KINETICS_FPS // spec.fps),
        },
    )
    recipe = replace(
        recipe,
        name=f"converted-{network_name}",
        description=f"{network_name}, converted from the Model Garden's {weights.layout} file",
        reference=f"Converted by `actrec pretrained convert` from {source}",
    )
    validate_recipe(recipe)
    return recipe


def _write_run(out: Path, recipe, classes, record, weights, assign_weights) -> None:
    """Writes the run folder under a temporary name and renames it to `out` (atomic)."""
    # Keras: reading and checking a checkpoint does not import it.
    from actrec.models.factory import build_model

    model = build_model(recipe.model, recipe.data, len(classes))
    assign_weights(model, weights)
    temporary = out.with_name(f".{out.name}.converting")
    created = create_parents(temporary)
    shutil.rmtree(temporary, ignore_errors=True)
    try:
        temporary.mkdir()
        model.save_weights(str(temporary / FINAL_WEIGHTS_FILE))
        dump_recipe(recipe, temporary / RECIPE_FILE)
        write_run_record(temporary, RunRecord.from_json(record))
        temporary.rename(out)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        remove_created_parents(created)
        raise
