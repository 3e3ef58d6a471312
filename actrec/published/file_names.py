"""What the names of published files say of their models: TSM's and mmaction2's.

TSM's repository names its checkpoints by its `main.py` arguments
(mit-han-lab/temporal-shift-module README, "Pretrained Models"):

    TSM_{dataset}_{RGB|Flow}_{arch}[_shift{div}_{place}]_avg_segment{T}_e{epochs}[_dense][_nl].pth
    e.g. TSM_kinetics_RGB_resnet50_shift8_blockres_avg_segment8_e50.pth (TSM),
         TSM_kinetics_RGB_resnet50_avg_segment5_e50.pth (TSN: no shift)

mmaction2 names them by their configs: `{tsn|tsm}_..._r50_..._{clip_len}x{interval}x{clips}_
..._{dataset}_{rgb|flow}...` (1.x: tsm_imagenet-pretrained-r50_8xb16-1x1x8-50e_kinetics400-rgb_
20220831-64d69186.pth; 0.x: tsm_r50_1x1x8_50e_kinetics400_rgb_20200607-af7fb746.pth).

A name that says nothing (the online demo's mobilenetv2_jester_online.pth.tar) gives nothing:
the user's options and the keys fill in the rest (actrec.published.convert).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TSM_NAME = re.compile(
    r"^TSM_(?P<dataset>[A-Za-z0-9]+)_(?P<modality>RGB|Flow)_(?P<arch>[a-z0-9]+)"
    r"(?:_shift(?P<division>\d+)_(?P<placement>blockres|block))?"
    r"_(?P<consensus>[a-z]+)_segment(?P<segments>\d+)_e(?P<epochs>\d+)"
    r"(?P<dense>_dense)?(?P<non_local>_nl)?\.pth(?:\.tar)?$"
)
_MMACTION2_NAME = re.compile(r"^(?P<architecture>tsn|tsm)[_-]", re.IGNORECASE)
_MMACTION2_SAMPLING = re.compile(r"[_-](?P<length>\d+)x(?P<interval>\d+)x(?P<clips>\d+)[_-]")
_MMACTION2_MODALITY = re.compile(r"[_-](?P<modality>rgb|flow)(?:[_.-]|$)")
_MMACTION2_DEPTH = re.compile(r"[_-]r(?P<depth>50|101)[_-]")

TSM_DATASETS = {
    "kinetics": "kinetics400",
    "somethingv2": "something-something-v2",
    "jester": "jester",
    "ucf101": "ucf101",
    "hmdb51": "hmdb51-tsn",  # TSM's README prepares HMDB51 with TSN's class_list.txt order
}
"""TSM's dataset names -> actrec's built-in class lists (ops/dataset_config.py's names);
Something-Something V1 ("something") has no list: give --classes."""
MMACTION2_DATASETS = ("kinetics400", "ucf101", "hmdb51", "sthv2", "jester")
MMACTION2_CLASS_LISTS = {"sthv2": "something-something-v2", "jester": "jester-mmaction2"}
"""mmaction2 dataset names whose class list differs in name or order from TSM's."""
TSM_DENSE_INTERVAL_FRAMES = 64
"""TSM's dense sampling takes T frames every 64 // T (ops/dataset.py `_sample_indices`)."""


@dataclass(frozen=True)
class NamedSettings:
    """What a file name says; None where it says nothing."""

    source: str | None = None  # "tsm" or "mmaction2"
    architecture: str | None = None
    modality: str | None = None
    backbone_family: str | None = None  # "resnet" or "mobilenet_v2"
    depth: int | None = None
    num_segments: int | None = None
    shift_fraction: float | None = None
    shift_placement: str | None = None
    dense: bool | None = None
    dataset: str | None = None  # an actrec class list name
    non_local: bool = False
    new_length: int | None = None


def _tsm_settings(match: re.Match) -> NamedSettings:
    arch = match.group("arch")
    division = match.group("division")
    family, depth = ("mobilenet_v2", None) if arch.startswith("mobilenet") else ("resnet", None)
    if family == "resnet" and (digits := re.sub(r"\D", "", arch)):
        depth = int(digits)
    return NamedSettings(
        source="tsm",
        architecture="tsm" if division else "tsn",
        modality="rgb" if match.group("modality") == "RGB" else "flow",
        backbone_family=family,
        depth=depth,
        num_segments=int(match.group("segments")),
        shift_fraction=1 / int(division) if division else None,
        shift_placement=match.group("placement"),
        dense=match.group("dense") is not None,
        dataset=TSM_DATASETS.get(match.group("dataset")),
        non_local=match.group("non_local") is not None,
    )


def _mmaction2_settings(name: str) -> NamedSettings:
    lowered = name.lower()
    sampling = _MMACTION2_SAMPLING.search(lowered)
    modality = _MMACTION2_MODALITY.search(lowered)
    depth = _MMACTION2_DEPTH.search(lowered)
    dataset = next((dataset for dataset in MMACTION2_DATASETS if dataset in lowered), None)
    flow = modality is not None and modality.group("modality") == "flow"
    return NamedSettings(
        source="mmaction2",
        architecture=_MMACTION2_NAME.match(lowered).group("architecture"),
        modality=None if modality is None else modality.group("modality"),
        backbone_family="resnet" if depth else None,
        depth=int(depth.group("depth")) if depth else None,
        num_segments=int(sampling.group("clips")) if sampling else None,
        new_length=int(sampling.group("length")) if sampling and flow else None,
        dense=re.search(r"[_-]dense[_-]", lowered) is not None,
        dataset=MMACTION2_CLASS_LISTS.get(dataset, dataset),
    )


def settings_from_file_name(name: str) -> NamedSettings:
    """What the published file name `name` (no folder) says of its model."""
    if match := _TSM_NAME.match(name):
        return _tsm_settings(match)
    if _MMACTION2_NAME.match(name) and _MMACTION2_SAMPLING.search(name.lower()):
        return _mmaction2_settings(name)
    return NamedSettings()
