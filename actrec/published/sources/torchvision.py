"""torchvision's ImageNet ResNets (the files TSM and mmaction2 start from): keys `conv1`,
`bn1`, `layer{S}.{B}.*`, `fc` (the classifier). A 1000-class ImageNet classifier: a
backbone's weights (`actrec pretrained fetch / import`) or a start for `--init-from`."""

from __future__ import annotations

from actrec.backbones.published_layout import CLASSIFIER_MODULE
from actrec.published.sources.registry import TORCHVISION_RESNET, PublishedSource


def _module_name(module: str) -> str:
    return CLASSIFIER_MODULE if module == "fc" else module


SOURCE = PublishedSource(
    name="torchvision",
    title="torchvision's ImageNet ResNet",
    claims=lambda keys: "layer1.0.conv1.weight" in keys and "conv1.weight" in keys,
    key_form="conv1, layer1.*, fc",
    module_name=_module_name,
    backbones={"resnet": TORCHVISION_RESNET},
    docs_section="ImageNet starts",
    preprocessing="tsm",  # RGB as torchvision normalises it
    imagenet_classifiers=True,
)
