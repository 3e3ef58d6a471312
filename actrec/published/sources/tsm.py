"""TSM's repository (mit-han-lab/temporal-shift-module): its TSN and TSM checkpoints.

Keys: `base_model.*` (the backbone; a shifted block's convolution wrapped as `.net`) and
`new_fc` (the classifier; `fc` / `classifier` when dropout is 0 and the base model's own is
kept). Files are named by `main.py`'s arguments (its README, "Pretrained Models"):

    TSM_{dataset}_{RGB|Flow}_{arch}[_shift{div}_{place}]_avg_segment{T}_e{epochs}[_dense][_nl].pth
    e.g. TSM_kinetics_RGB_resnet50_shift8_blockres_avg_segment8_e50.pth (TSM),
         TSM_kinetics_RGB_resnet50_avg_segment5_e50.pth (TSN: no shift)

Input: RGB as torchvision normalises it, flow as TSM's ops/models.py (preprocessing "tsm").
"""

from __future__ import annotations

import re

from actrec.backbones.published_layout import CLASSIFIER_MODULE
from actrec.published.file_names import NamedSettings
from actrec.published.sources.registry import (
    TORCHVISION_RESNET,
    TSM_MOBILENET_V2,
    PublishedSource,
    strip_prefix,
)

MODELS_URL = "https://hanlab18.mit.edu/projects/tsm/models/"
_NAME = re.compile(
    r"^TSM_(?P<dataset>[A-Za-z0-9]+)_(?P<modality>RGB|Flow)_(?P<arch>[a-z0-9]+)"
    r"(?:_shift(?P<division>\d+)_(?P<placement>blockres|block))?"
    r"_(?P<consensus>[a-z]+)_segment(?P<segments>\d+)_e(?P<epochs>\d+)"
    r"(?P<dense>_dense)?(?P<non_local>_nl)?\.pth(?:\.tar)?$"
)
DATASETS = {
    "kinetics": "kinetics400",
    "somethingv2": "something-something-v2",
    "jester": "jester",
    "ucf101": "ucf101",
    "hmdb51": "hmdb51-tsn",  # TSM's README prepares HMDB51 with TSN's class_list.txt order
}
"""TSM's dataset names -> actrec's built-in class lists (ops/dataset_config.py's names);
Something-Something V1 ("something") has no list: give --classes."""


def _module_name(module: str) -> str:
    module = strip_prefix(module, "base_model.")
    if module in ("new_fc", "fc", "classifier"):  # dropout 0: the base model's own
        return CLASSIFIER_MODULE
    return module


def _named_settings(name: str) -> NamedSettings | None:
    match = _NAME.match(name)
    if match is None:
        return None
    arch = match.group("arch")
    division = match.group("division")
    family, depth = ("mobilenet_v2", None) if arch.startswith("mobilenet") else ("resnet", None)
    if family == "resnet" and (digits := re.sub(r"\D", "", arch)):
        depth = int(digits)
    settings = {
        "model.architecture": "tsm" if division else "tsn",
        "data.modality": "rgb" if match.group("modality") == "RGB" else "flow",
        "data.num_segments": int(match.group("segments")),
    }
    if division:
        settings["model.shift_fraction"] = 1 / int(division)
        settings["model.shift_placement"] = match.group("placement")
    if match.group("dense"):
        settings["data.sampling"] = "dense"
    return NamedSettings(
        source="tsm",
        settings=settings,
        dataset=DATASETS.get(match.group("dataset")),
        backbone_family=family,
        depth=depth,
        non_local=match.group("non_local") is not None,
    )


def _download_hint(name: str) -> str | None:
    return f"download it from {MODELS_URL}{name}" if _NAME.match(name) else None


SOURCE = PublishedSource(
    name="tsm",
    title="TSM's",
    claims=lambda keys: any(key.startswith("base_model.") for key in keys),
    key_form="base_model.*, new_fc",
    module_name=_module_name,
    backbones={"resnet": TORCHVISION_RESNET, "mobilenet_v2": TSM_MOBILENET_V2},
    docs_section="TSM's repository",
    preprocessing="tsm",
    named_settings=_named_settings,
    download_hint=_download_hint,
)
