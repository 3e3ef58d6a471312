"""The resnet_torchvision family's own: torchvision's module names -> Keras layers."""

from __future__ import annotations

import pytest

from actrec.backbones.registry import BACKBONES, PUBLISHED_LAYOUTS
from actrec.backbones.resnet_torchvision.layout import TORCHVISION_RESNET_LAYOUT


@pytest.mark.parametrize(
    ("module", "layer"),
    [
        ("conv1", "conv1_conv"),
        ("bn1", "conv1_bn"),
        ("layer1.0.conv1", "conv2_block1_1_conv"),
        ("layer3.22.bn3", "conv4_block23_3_bn"),
        ("layer2.0.downsample.0", "conv3_block1_0_conv"),
        ("layer2.0.downsample.1", "conv3_block1_0_bn"),
        ("layer1.0.relu", None),
    ],
)
def test_each_torchvision_module_names_its_keras_layer(module, layer):
    assert TORCHVISION_RESNET_LAYOUT.layer_name(module) == layer


def test_the_family_is_the_published_resnet_layout_and_shifts_as_keras_resnet():
    assert PUBLISHED_LAYOUTS["resnet"] is TORCHVISION_RESNET_LAYOUT
    for name in ("resnet50_torchvision", "resnet101_torchvision"):
        spec = BACKBONES[name]
        assert (spec.family, spec.layout, spec.shift_family) == (
            "resnet_torchvision",
            "pytorch",
            "resnet",
        )
        assert spec.weights.hash_algorithm == "sha256-prefix"
        assert spec.weights.source_file_name.endswith(f"-{spec.weights.file_hash}.pth")
