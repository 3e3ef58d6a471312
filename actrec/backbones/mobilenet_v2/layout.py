"""TSM's MobileNetV2 module names (archs/mobilenet_v2.py, also the online demo's) -> the
Keras layers of actrec's networks: `features.0.{0,1}` (the stem convolution and BatchNorm),
`features.{M}.conv.{J}` (inverted residual M, its J-th module), `features.18.{0,1}` (the last
1x1 convolution). Standard library only."""

from __future__ import annotations

import re

from actrec.backbones.spec import PublishedLayout

MOBILENET_V2_LAST_FEATURE = 18
_MOBILENET_STEM = re.compile(r"^features\.(\d+)\.([01])$")
_MOBILENET_BLOCK = re.compile(r"^features\.(\d+)\.conv\.(\d)$")
_EXPANDED_BLOCK_MODULES = {
    0: "expand",
    1: "expand_BN",
    3: "depthwise",
    4: "depthwise_BN",
    6: "project",
    7: "project_BN",
}
_FIRST_BLOCK_MODULES = {0: "depthwise", 1: "depthwise_BN", 3: "project", 4: "project_BN"}


def mobilenet_v2_layer_name(module: str) -> str | None:
    """The Keras layer of TSM MobileNetV2 module `module`, None if it has none."""
    if match := _MOBILENET_STEM.match(module):
        feature, index = int(match.group(1)), match.group(2)
        if feature == 0:
            return "Conv1" if index == "0" else "bn_Conv1"
        if feature == MOBILENET_V2_LAST_FEATURE:
            return "Conv_1" if index == "0" else "Conv_1_bn"
        return None
    if match := _MOBILENET_BLOCK.match(module):
        feature, index = int(match.group(1)), int(match.group(2))
        if feature == 1:
            suffix = _FIRST_BLOCK_MODULES.get(index)
            return None if suffix is None else f"expanded_conv_{suffix}"
        suffix = _EXPANDED_BLOCK_MODULES.get(index)
        if suffix is None or not 2 <= feature < MOBILENET_V2_LAST_FEATURE:
            return None
        return f"block_{feature - 1}_{suffix}"
    return None


TSM_MOBILENET_V2_LAYOUT = PublishedLayout(
    "mobilenet_v2", "features.0.0", re.compile(r"^features\.\d+$"), mobilenet_v2_layer_name
)
