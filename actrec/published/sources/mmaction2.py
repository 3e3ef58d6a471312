"""mmaction2's TSN and TSM checkpoints (open-mmlab/mmaction2, 0.x and 1.x).

Keys: `backbone.*` (ConvModule's `.conv` / `.bn` around each convolution; a shifted block's
convolution wrapped as `.net`) and `cls_head.fc_cls` (the classifier). Files are named by
their configs: `{tsn|tsm}_..._r50_..._{clip_len}x{interval}x{clips}_..._{dataset}_{rgb|flow}...`
(1.x: tsm_imagenet-pretrained-r50_8xb16-1x1x8-50e_kinetics400-rgb_20220831-64d69186.pth;
0.x: tsm_r50_1x1x8_50e_kinetics400_rgb_20200607-af7fb746.pth), in per-config folders of its
model zoo that the name does not say.

Input: RGB as torchvision normalises it (mmaction2's mean 123.675, 116.28, 103.53 and std
58.395, 57.12, 57.375), flow (x - 128) / 128 (its TSN flow configs): preprocessing
"mmaction2" (actrec.backbones.spec.SOURCE_NORMALISATIONS).
"""

from __future__ import annotations

import re

from actrec.backbones.published_layout import CLASSIFIER_MODULE
from actrec.published.file_names import NamedSettings
from actrec.published.sources.registry import TORCHVISION_RESNET, PublishedSource, strip_prefix

NAME = "mmaction2"
MODELS_URL = "https://download.openmmlab.com/mmaction/v1.0/recognition/"
OLD_MODELS_URL = "https://download.openmmlab.com/mmaction/recognition/"
"""Where its 1.x files live (names with `NxbM`, e.g. 8xb16), and its 0.x files: each under
ARCHITECTURE/CONFIG/, CONFIG being the file name without its `_DATE-HASH.pth` (its READMEs'
checkpoint links)."""
_CONFIG = re.compile(r"^(?P<config>.+)_\d{8}-[0-9a-f]{8}\.pth$")
_NEW_GENERATION = re.compile(r"[_-]\d+xb\d+[_-]")
_STEM = {"conv1.conv": "conv1", "conv1.bn": "bn1"}
_BLOCK = re.compile(r"^(layer\d\.\d+)\.(conv(\d))\.(conv|bn)$")
_DOWNSAMPLE = re.compile(r"^(layer\d\.\d+)\.downsample\.(conv|bn)$")
_ARCHITECTURE = re.compile(r"^(?P<architecture>tsn|tsm)[_-]", re.IGNORECASE)
_SAMPLING = re.compile(r"[_-](?P<length>\d+)x(?P<interval>\d+)x(?P<clips>\d+)[_-]")
_MODALITY = re.compile(r"[_-](?P<modality>rgb|flow)(?:[_.-]|$)")
_DEPTH = re.compile(r"[_-]r(?P<depth>50|101)[_-]")
DATASETS = ("kinetics400", "ucf101", "hmdb51", "sthv2", "jester")
CLASS_LISTS = {"sthv2": "something-something-v2", "jester": f"jester-{NAME}"}
"""Its dataset names whose class list differs in name or order from TSM's."""


def _module_name(module: str) -> str:
    if module == "cls_head.fc_cls":
        return CLASSIFIER_MODULE
    module = strip_prefix(module, "backbone.")
    if module in _STEM:
        return _STEM[module]
    if match := _BLOCK.match(module):
        block, _, index, kind = match.groups()
        return f"{block}.{kind}{index}"
    if match := _DOWNSAMPLE.match(module):
        block, kind = match.groups()
        return f"{block}.downsample.{0 if kind == 'conv' else 1}"
    return module


def _is_its_name(name: str) -> bool:
    return bool(_ARCHITECTURE.match(name) and _SAMPLING.search(name.lower()))


def _named_settings(name: str) -> NamedSettings | None:
    if not _is_its_name(name):
        return None
    lowered = name.lower()
    sampling = _SAMPLING.search(lowered)
    modality = _MODALITY.search(lowered)
    depth = _DEPTH.search(lowered)
    dataset = next((dataset for dataset in DATASETS if dataset in lowered), None)
    settings = {
        "model.architecture": _ARCHITECTURE.match(lowered).group("architecture"),
        "data.num_segments": int(sampling.group("clips")),
    }
    if modality is not None:
        settings["data.modality"] = modality.group("modality")
        if modality.group("modality") == "flow":
            settings["data.new_length"] = int(sampling.group("length"))
    if re.search(r"[_-]dense[_-]", lowered):
        settings["data.sampling"] = "dense"
    return NamedSettings(
        source=NAME,
        settings=settings,
        dataset=CLASS_LISTS.get(dataset, dataset),
        backbone_family="resnet" if depth else None,
        depth=int(depth.group("depth")) if depth else None,
    )


def download_url(name: str) -> str | None:
    """The URL of its published file `name`, None when the name does not say it."""
    config = _CONFIG.match(name)
    if not _is_its_name(name) or config is None:
        return None
    base = MODELS_URL if _NEW_GENERATION.search(name) else OLD_MODELS_URL
    architecture = _ARCHITECTURE.match(name).group("architecture").lower()
    return f"{base}{architecture}/{config.group('config')}/{name}"


def _download_hint(name: str) -> str | None:
    if not _is_its_name(name):
        return None
    url = download_url(name)
    return (
        f"download it from {url}"
        if url
        else f"download it from {NAME}'s model zoo under {MODELS_URL}"
    )


SOURCE = PublishedSource(
    name=NAME,
    title=f"{NAME}'s",
    claims=lambda keys: any(key.startswith("backbone.") for key in keys),
    key_form="backbone.*, cls_head.fc_cls",
    module_name=_module_name,
    backbones={"resnet": TORCHVISION_RESNET},
    docs_section=NAME,
    preprocessing=NAME,
    named_settings=_named_settings,
    download_hint=_download_hint,
)
