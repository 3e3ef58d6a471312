"""The PyTorch module -> Keras layer tables of the families' published layouts, read as one:
the network family of a published state dict (its first convolution tells it) and the Keras
layer of each of its modules.

Each family with a PyTorch layout has its table in its folder (`layout.py`: torchvision's
ResNet in resnet_torchvision, TSM's MobileNetV2 in mobilenet_v2); the registry gathers them
(actrec.backbones.registry.PUBLISHED_LAYOUTS). The published files name modules in several
ways; each source (actrec.published.sources) brings them to one of these spellings first.
The classifier of every layout is `classifier`. Standard library only.
"""

from __future__ import annotations

from collections.abc import Collection

from actrec.backbones.registry import PUBLISHED_LAYOUTS
from actrec.errors import WeightsError

CLASSIFIER_MODULE = "classifier"


def family_of(modules: Collection[str]) -> str:
    """The layout whose first convolution is one of `modules` (the first layout when none
    is: its stem is then named as missing)."""
    present = (name for name, layout in PUBLISHED_LAYOUTS.items() if layout.stem in modules)
    return next(present, next(iter(PUBLISHED_LAYOUTS)))


def keras_layer_name(family: str, module: str) -> str | None:
    """The Keras layer of PyTorch module `module` of a `family` network (a name of
    PUBLISHED_LAYOUTS); the classifier is `classifier` in all; None if it has none."""
    if module == CLASSIFIER_MODULE:
        return CLASSIFIER_MODULE
    if family not in PUBLISHED_LAYOUTS:
        raise WeightsError(f"no PyTorch layout is known for the {family!r} family")
    return PUBLISHED_LAYOUTS[family].layer_name(module)
