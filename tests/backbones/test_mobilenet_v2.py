"""The mobilenet_v2 family's own: TSM's module names -> Keras layers, and where TSM
shifts a MobileNetV2."""

from __future__ import annotations

import pytest

from actrec.backbones.mobilenet_v2.layout import TSM_MOBILENET_V2_LAYOUT
from actrec.backbones.mobilenet_v2.shift import MOBILENET_V2_SHIFT
from actrec.backbones.registry import FAMILIES, PUBLISHED_LAYOUTS


@pytest.mark.parametrize(
    ("module", "layer"),
    [
        ("features.0.0", "Conv1"),
        ("features.0.1", "bn_Conv1"),
        ("features.1.conv.0", "expanded_conv_depthwise"),
        ("features.1.conv.4", "expanded_conv_project_BN"),
        ("features.2.conv.0", "block_1_expand"),
        ("features.17.conv.7", "block_16_project_BN"),
        ("features.18.0", "Conv_1"),
        ("features.18.1", "Conv_1_bn"),
        ("features.2.conv.2", None),  # a ReLU6: no weights
    ],
)
def test_each_tsm_module_names_its_keras_layer(module, layer):
    assert TSM_MOBILENET_V2_LAYOUT.layer_name(module) == layer


def test_tsm_shifts_the_residual_blocks_expansion():
    assert MOBILENET_V2_SHIFT.residual_add.match("block_5_add").group(1) == "block_5"
    assert MOBILENET_V2_SHIFT.block.match("block_5_expand").group(1) == "block_5"
    assert MOBILENET_V2_SHIFT.first_branch_convolution == "_expand"
    assert MOBILENET_V2_SHIFT.blockres_blocks is None
    family = FAMILIES["mobilenet_v2"]
    assert family.shift is MOBILENET_V2_SHIFT
    assert PUBLISHED_LAYOUTS["mobilenet_v2"] is TSM_MOBILENET_V2_LAYOUT
    assert {spec.shift_family for spec in family.specs} == {"mobilenet_v2"}
