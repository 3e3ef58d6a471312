"""The PyTorch-layout backbones and the tables that name their layers after PyTorch modules:
every weighted Keras layer is exactly one module of the source's network, and the file
names say what the authors' names mean. (The numbers themselves are checked against
reference networks in tests/published/test_published_convert.py.)"""

from __future__ import annotations

import keras
import numpy as np
import pytest

from actrec.backbones.build import build_plain_backbone
from actrec.backbones.published_layout import keras_layer_name
from actrec.backbones.registry import backbone_spec
from actrec.errors import WeightsError
from actrec.models.temporal_shift import TemporalShift, insert_temporal_shift
from actrec.published.file_names import settings_from_file_name
from actrec.published.layouts import detect_layout, published_network


def torchvision_resnet_modules(depth: int) -> list[str]:
    """torchvision's module paths with weights (conv / bn / downsample), no fc."""
    blocks = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3)}[depth]
    modules = ["conv1", "bn1"]
    for stage, count in enumerate(blocks, start=1):
        for block in range(count):
            prefix = f"layer{stage}.{block}"
            modules += [f"{prefix}.{kind}{index}" for index in (1, 2, 3) for kind in ("conv", "bn")]
            if block == 0:
                modules += [f"{prefix}.downsample.0", f"{prefix}.downsample.1"]
    return modules


def tsm_mobilenet_v2_modules() -> list[str]:
    """archs/mobilenet_v2.py's module paths with weights, no classifier."""
    modules = ["features.0.0", "features.0.1", *(f"features.1.conv.{i}" for i in (0, 1, 3, 4))]
    for feature in range(2, 18):
        modules += [f"features.{feature}.conv.{i}" for i in (0, 1, 3, 4, 6, 7)]
    return [*modules, "features.18.0", "features.18.1"]


@pytest.mark.parametrize(
    ("backbone", "family", "modules"),
    [
        ("resnet50_torchvision", "resnet", torchvision_resnet_modules(50)),
        ("resnet101_torchvision", "resnet", torchvision_resnet_modules(101)),
        ("mobilenet_v2_tsm", "mobilenet_v2", tsm_mobilenet_v2_modules()),
    ],
)
def test_every_weighted_layer_is_exactly_one_pytorch_module(backbone, family, modules):
    network = build_plain_backbone(backbone_spec(backbone), (32, 32, 3))
    weighted = {layer.name for layer in network.layers if layer.weights}
    named = [keras_layer_name(family, module) for module in modules]
    assert None not in named
    assert len(set(named)) == len(named)  # one module per layer
    assert set(named) == weighted


def test_torchvision_resnet_puts_the_stride_on_the_3x3_convolution_without_biases():
    network = build_plain_backbone(backbone_spec("resnet50_torchvision"), (64, 64, 3))
    block = {layer.name: layer for layer in network.layers}
    assert block["conv3_block1_1_conv"].strides == (1, 1)
    assert block["conv3_block1_2_conv"].strides == (2, 2)
    assert block["conv3_block1_0_conv"].strides == (2, 2)
    convolutions = [layer for layer in network.layers if isinstance(layer, keras.layers.Conv2D)]
    assert not any(layer.use_bias for layer in convolutions)
    norms = [
        layer for layer in network.layers if isinstance(layer, keras.layers.BatchNormalization)
    ]
    assert {layer.epsilon for layer in norms} == {1e-5}


def test_tsm_shifts_the_blocks_the_official_code_shifts():
    spec = backbone_spec("resnet101_torchvision")
    resnet101 = insert_temporal_shift(build_plain_backbone(spec, (32, 32, 3)), spec, 2)
    shifts = [layer.name for layer in resnet101.layers if isinstance(layer, TemporalShift)]
    assert len(shifts) == 18  # n_round = 2: every other block of each stage
    spec = backbone_spec("mobilenet_v2_tsm")
    mobilenet = insert_temporal_shift(build_plain_backbone(spec, (32, 32, 3)), spec, 2)
    shifted = sorted(
        int(layer.name.split("_")[1])
        for layer in mobilenet.layers
        if isinstance(layer, TemporalShift)
    )
    # The online demo's shift_block_idx [2, 4, 5, 7, 8, 9, 11, 12, 14, 15], one-based blocks.
    assert shifted == [2, 4, 5, 7, 8, 9, 11, 12, 14, 15]


def test_layouts_are_recognised_by_their_keys_and_others_refused():
    assert detect_layout(["base_model.conv1.weight", "new_fc.weight"]) == "tsm"
    assert detect_layout(["backbone.conv1.conv.weight", "cls_head.fc_cls.weight"]) == "mmaction2"
    assert detect_layout(["conv1.weight", "layer1.0.conv1.weight", "fc.weight"]) == "torchvision"
    assert detect_layout(["features.0.0.weight", "classifier.weight"]) == "mobilenet"
    with pytest.raises(WeightsError, match="none of the layouts"):
        detect_layout(["encoder.blocks.0.attn.qkv.weight"])


def test_shift_wrappers_give_the_placement_and_mmaction2_names_become_torchvision_names():
    zeros = np.zeros
    tsm = published_network(
        {
            "module.base_model.conv1.weight": zeros((64, 10, 7, 7)),
            "module.base_model.layer3.5.conv1.net.weight": zeros((256, 1024, 1, 1)),
            "module.new_fc.weight": zeros((400, 2048)),
            "module.new_fc.bias": zeros(400),
        }
    )
    assert (tsm.layout, tsm.shift_placement, tsm.input_channels) == ("tsm", "blockres", 10)
    assert "layer3.5.conv1" in tsm.modules and tsm.num_classes == 400
    mmaction2 = published_network(
        {
            "backbone.conv1.conv.weight": zeros((64, 3, 7, 7)),
            "backbone.layer3.5.conv1.conv.net.weight": zeros((256, 1024, 1, 1)),
            "backbone.layer1.0.downsample.bn.running_var": zeros(256),
            "backbone.layer1.0.downsample.bn.num_batches_tracked": zeros(()),
            "cls_head.fc_cls.weight": zeros((174, 2048)),
        }
    )
    assert mmaction2.shift_placement == "blockres"
    assert {"conv1", "layer3.5.conv1", "layer1.0.downsample.1", "classifier"} == set(
        mmaction2.modules
    )
    assert mmaction2.modules["layer1.0.downsample.1"].keys() == {"running_var"}


def test_tsm_file_names_say_architecture_segments_sampling_and_dataset():
    tsm = settings_from_file_name("TSM_kinetics_RGB_resnet50_shift8_blockres_avg_segment8_e50.pth")
    assert (tsm.source, tsm.architecture, tsm.modality, tsm.depth) == ("tsm", "tsm", "rgb", 50)
    assert (tsm.num_segments, tsm.shift_fraction, tsm.shift_placement) == (8, 0.125, "blockres")
    assert (tsm.dense, tsm.dataset, tsm.non_local) == (False, "kinetics400", False)
    tsn = settings_from_file_name("TSM_kinetics_RGB_resnet50_avg_segment5_e50.pth")
    assert (tsn.architecture, tsn.num_segments, tsn.shift_fraction) == ("tsn", 5, None)
    flow = settings_from_file_name(
        "TSM_kinetics_Flow_resnet50_shift8_blockres_avg_segment8_e50.pth"
    )
    assert flow.modality == "flow"
    dense = settings_from_file_name(
        "TSM_kinetics_RGB_mobilenetv2_shift8_blockres_avg_segment8_e100_dense_nl.pth"
    )
    assert (dense.backbone_family, dense.dense, dense.non_local) == ("mobilenet_v2", True, True)
    assert settings_from_file_name(
        "TSM_somethingv2_RGB_resnet101_shift8_blockres_avg_segment8_e45.pth"
    ).dataset == ("something-something-v2")


def test_mmaction2_file_names_of_both_generations():
    new = settings_from_file_name(
        "tsm_imagenet-pretrained-r50_8xb16-dense-1x1x8-50e_kinetics400-rgb_20220831-f55d3c2b.pth"
    )
    assert (new.source, new.architecture, new.depth, new.num_segments) == (
        "mmaction2",
        "tsm",
        50,
        8,
    )
    assert (new.modality, new.dataset, new.dense) == ("rgb", "kinetics400", True)
    old = settings_from_file_name("tsn_r50_320p_1x1x3_110e_kinetics400_flow_20200705-3036bab6.pth")
    assert (old.architecture, old.modality, old.num_segments) == ("tsn", "flow", 3)
    assert settings_from_file_name("mobilenetv2_jester_online.pth.tar").source is None
