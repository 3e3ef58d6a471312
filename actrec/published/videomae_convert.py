"""`actrec pretrained convert` of a published VideoMAE (or VideoMAE V2) file -> a finished
run folder, as the PyTorch TSN / TSM conversion makes one (actrec.published.convert).

    a Hugging Face folder (config.json + model.safetensors / pytorch_model.bin), a
    .safetensors file, or the authors' / V2's .pth
        --read-->   tensors as data (actrec.published.videomae_files; values checked)
        --family--> the registered size, the fields it differs in (model.network), its
                    classes and weights (the videomae family's clip_converter, through the
                    registry)
        -->  OUT/recipe.yaml, OUT/run.json, OUT/final.weights.h5 (whole or not at all)

The classes: --classes, else the config's id2label (its count checked), else a fine-tuned
source's list by the file's name (Kinetics-400, Something-Something V2). The weights'
license (WEIGHTS_LICENSES) is printed, recorded in run.json and on the model card.
"""

from __future__ import annotations

import hashlib
import importlib
from dataclasses import replace
from pathlib import Path

from actrec import __version__
from actrec.backbones.registry import CLIP_FAMILIES
from actrec.config.files import load_recipe
from actrec.config.overrides import with_settings
from actrec.config.validate import validate_recipe
from actrec.errors import ConfigError, WeightsError
from actrec.published.class_lists import CLASS_LISTS, resolve_class_names
from actrec.published.videomae_files import (
    CONFIG_FILE,
    SAFETENSORS_FILE,
    TORCH_FILE,
    read_videomae_file,
)

ARCHITECTURE = "videomae"
BASE_RECIPE = "tsm-kinetics400"
"""The schedule a converted run's recipe keeps (as the TSM conversion's); its clip and
network are the source's."""
WEIGHTS_LICENSES = {
    "videomae": "CC-BY-NC-4.0 (MCG-NJU/VideoMAE's LICENSE: Attribution-NonCommercial 4.0 "
    "International; the Hugging Face MCG-NJU/videomae-* cards: cc-by-nc-4.0)",
    "videomae-v2": "VideoMAE V2: the .pth files' Hugging Face repository OpenGVLab/VideoMAE2 "
    "states apache-2.0 (the code, OpenGVLab/VideoMAEv2: MIT); its Hugging Face-format cards "
    "OpenGVLab/VideoMAEv2-Base / -Large / -giant state cc-by-nc-4.0",
}
"""What each source's weights are published under, as its repository and cards state."""
V2_NAMES = ("videomaev2", "videomae2", "videomae_v2", "videomae-v2", "_k710_", "vit_g_hybrid")
"""What the name of a VideoMAE V2 file or folder contains (OpenGVLab/VideoMAE2's files:
vit_b_k710_dl_from_giant.pth, vit_g_hybrid_pt_1200e_k710_ft.pth)."""
DATASETS_BY_NAME = (("kinetics", "kinetics400", 400), ("ssv2", "something-something-v2", 174),
                    ("something", "something-something-v2", 174))  # fmt: skip
"""A fine-tuned source's class list by what its name contains, and that list's size."""
SAMPLING = {"something-something-v2": ("tsn", 2), "kinetics400": ("dense", 4)}
"""(data.sampling, data.frame_interval): VideoMAE's fine-tuning samples Kinetics as 16x4
(16 frames 4 apart) and Something-Something V2 with TSN's segments (MODEL_ZOO.md's note)."""


def family_converter():
    """The videomae family's clip_converter module (through the registry: published/ names
    no family folder)."""
    family = CLIP_FAMILIES[ARCHITECTURE]
    return importlib.import_module(f"actrec.backbones.{family.name}.{family.clip_converter}")


def is_videomae_source(path: Path, architecture: str | None) -> bool:
    """Whether `path` is converted as a VideoMAE without reading it: --architecture videomae,
    a folder, or a .safetensors file (a .pth is known by its keys once read)."""
    return architecture == ARCHITECTURE or path.is_dir() or path.suffix == ".safetensors"


def check_videomae_source(path: Path) -> None:
    """WeightsError when `path` is neither a file nor a folder, or a folder without a
    Hugging Face model's files (by their names: nothing is read, so it is answered before
    TensorFlow)."""
    if not path.exists():
        raise WeightsError(
            f"{path}: no such file or folder; give a VideoMAE .pth / .bin / .safetensors file "
            "or a Hugging Face model folder (docs/model-zoo.md lists the published ones)"
        )
    if path.is_dir() and not (
        (path / CONFIG_FILE).is_file()
        and any((path / name).is_file() for name in (SAFETENSORS_FILE, TORCH_FILE))
    ):
        raise WeightsError(
            f"{path}: a folder without a published model: give a Hugging Face VideoMAE folder "
            f"({CONFIG_FILE} and {SAFETENSORS_FILE} or {TORCH_FILE}), a MoViNet checkpoint "
            "(ckpt-N.index and its data files) or TF Hub SavedModel folder, or a PyTorch "
            ".pth file (docs/model-zoo.md lists the published ones)"
        )


def source_license(path: Path, config: dict | None) -> tuple[str, str]:
    """(source, license): VideoMAE V2 when its name or config says so, else VideoMAE."""
    said = " ".join([str(path.resolve()).lower(), str((config or {}).get("_name_or_path", ""))])
    source = "videomae-v2" if any(name in said.lower() for name in V2_NAMES) else "videomae"
    return source, WEIGHTS_LICENSES[source]


def _class_names(path: Path, config, num_classes: int, classes: str | None):
    """(names, where they came from)."""
    if num_classes == 0:
        raise ConfigError(
            f"{path}: a pre-trained encoder without a classifier (no head tensors); convert a "
            "fine-tuned file (its classifier is the run's), e.g. MCG-NJU/videomae-base-"
            "finetuned-kinetics"
        )
    if classes is not None:
        return resolve_class_names(classes, num_classes), classes
    labels = (config or {}).get("id2label")
    if isinstance(labels, dict) and labels:
        try:
            names = tuple(str(labels[str(index)]) for index in range(len(labels)))
        except KeyError:
            raise WeightsError(
                f"{path}: config.json's id2label is not numbered 0 to {len(labels) - 1}"
            ) from None
        if len(names) == num_classes and names != tuple(f"LABEL_{i}" for i in range(len(names))):
            return names, "config.json id2label"
        if len(names) != num_classes:
            raise WeightsError(
                f"{path}: config.json's id2label names {len(names)} classes but the "
                f"classifier has {num_classes} outputs; download the model's config.json again"
            )
    name = path.resolve().as_posix().lower()
    for word, dataset, count in DATASETS_BY_NAME:
        if word in name and count == num_classes:
            return resolve_class_names(dataset, num_classes), dataset
    raise ConfigError(
        f"{path.name} does not say which dataset its {num_classes} classes are; give --classes "
        f"NAME ({', '.join(CLASS_LISTS)}) or --classes FILE (one name per line, "
        f"{num_classes} lines)"
    )


def _recipe(path: Path, conversion, dataset: str | None):
    sampling, interval = SAMPLING.get(dataset or "", ("dense", 4))
    recipe = with_settings(
        load_recipe(BASE_RECIPE),
        {
            "model.architecture": ARCHITECTURE,
            "model.backbone": conversion.backbone,
            "model.network": conversion.network,
            "model.weights": "none",  # the run's weights are the file's
            "model.dropout": 0.0,
            "model.partial_bn": None,
            "model.preprocessing": None,  # the network's own: ImageNet mean and std
            "data.modality": "rgb",
            "data.new_length": 1,
            "data.num_segments": conversion.num_frames,
            "data.crop_size": conversion.input_size,
            "data.scale_size": conversion.input_size,
            "data.sampling": sampling,
            "data.frame_interval": interval,
        },
    )
    recipe = replace(
        recipe,
        name=f"converted-{path.name.split('.')[0]}",
        description=f"{path.name}, converted from VideoMAE's {conversion.layout} layout",
        reference=f"Converted by `actrec pretrained convert` from {path}",
    )
    validate_recipe(recipe)
    return recipe


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def videomae_conversion(path: Path, classes: str | None = None, heads: int | None = None):
    """(recipe, class names, run.json record, assign) of a VideoMAE file or folder: what
    actrec.published.convert writes into the run folder."""
    source = read_videomae_file(path)
    conversion = family_converter().recipe_conversion(
        source.state_dict, source.weights_file, source.config, heads
    )
    names, classes_from = _class_names(path, source.config, conversion.num_classes, classes)
    dataset = classes_from if classes_from in SAMPLING else None  # a fine-tuned source
    recipe = _recipe(path, conversion, dataset)
    origin, license_text = source_license(path, source.config)
    record = {
        "actrec": __version__,
        "data": None,
        "classes": list(names),
        "num_classes": len(names),
        "status": "finished",
        "prepare_settings": None,
        "converted_from": {
            "file": str(source.weights_file.resolve()),
            "file_name": source.weights_file.name,
            "sha256": _sha256(source.weights_file),
            "file_format": source.weights_file.suffix.lstrip(".") or "torch",
            "layout": conversion.layout,
            "source": origin,
            "license": license_text,
            "classes": classes_from,
            "settings": {
                "backbone": {"value": conversion.backbone, "from": "tensors"},
                "network": {"value": list(conversion.network), "from": "tensors and config"},
                "num_segments": {"value": conversion.num_frames, "from": _from(source.config)},
                "crop_size": {"value": conversion.input_size, "from": _from(source.config)},
                "sampling": {"value": recipe.data.sampling, "from": dataset or "default"},
            },
            "metadata": {"config": source.config} if source.config else {},
        },
    }
    return recipe, names, record, conversion.assign


def _from(config) -> str:
    return "config.json" if config else "default (the published size's)"
