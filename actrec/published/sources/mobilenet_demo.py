"""TSM's MobileNetV2 (archs/mobilenet_v2.py): its ImageNet file, and the online demo's model
(online_demo/ of mit-han-lab/temporal-shift-module, mobilenetv2_jester_online.pth.tar: an
online TSM of the 27 Jester classes). A bare state dict: keys `features.{M}.*` (a shifted
block's first convolution wrapped as `.net`) and `classifier`; the demo's name says nothing,
so its settings are this source's defaults."""

from __future__ import annotations

from actrec.published.sources.registry import (
    IMAGENET_CLASSES,
    TSM_MOBILENET_V2,
    PublishedSource,
)

ONLINE_DEMO_FILE = "mobilenetv2_jester_online.pth.tar"
ONLINE_DEMO_CLASSES = {27: "jester"}
"""The online demo's released model: 27 Jester classes."""


def _defaults(network) -> dict:
    if network.num_classes == IMAGENET_CLASSES:
        return {}
    return {
        "model.architecture": "tsm",
        "model.shift_direction": "online",
        "dataset": ONLINE_DEMO_CLASSES.get(network.num_classes),
    }


def _download_hint(name: str) -> str | None:
    if name != ONLINE_DEMO_FILE:
        return None
    return "TSM's online demo (mit-han-lab/temporal-shift-module, online_demo/) downloads it"


SOURCE = PublishedSource(
    name="mobilenet",
    title="TSM's MobileNetV2",
    claims=lambda keys: "features.0.0.weight" in keys,
    key_form="features.*, classifier",
    module_name=lambda module: module,
    backbones={"mobilenet_v2": TSM_MOBILENET_V2},
    docs_section="TSM's repository",  # the online demo's row; its ImageNet file: ImageNet starts
    preprocessing="tsm",
    download_hint=_download_hint,
    defaults=_defaults,
    imagenet_classifiers=True,
)
