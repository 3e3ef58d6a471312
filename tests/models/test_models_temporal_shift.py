"""TemporalShift against docs/architecture.md §4's definition, and its placement in
residual blocks."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from actrec.backbones.build import build_backbone
from actrec.backbones.graph_edit import producing_layer_name
from actrec.backbones.registry import backbone_spec
from actrec.errors import ConfigError
from actrec.models.temporal_shift import TemporalShift, insert_temporal_shift


def reference_shift(frames: np.ndarray, segments: int, fold: int, online: bool = False):
    """docs/architecture.md §4, element by element: frames [N*T, H, W, C] -> same shape."""
    clips = frames.reshape(-1, segments, *frames.shape[1:])  # [N, T, H, W, C]
    out = clips.copy()
    for t in range(segments):
        if online:
            out[:, t, ..., :fold] = clips[:, t - 1, ..., :fold] if t > 0 else 0.0
            continue
        out[:, t, ..., :fold] = clips[:, t + 1, ..., :fold] if t < segments - 1 else 0.0
        out[:, t, ..., fold : 2 * fold] = clips[:, t - 1, ..., fold : 2 * fold] if t > 0 else 0.0
    return out.reshape(frames.shape)  # [N*T, H, W, C]


def shifted(frames, **options):
    return keras.ops.convert_to_numpy(TemporalShift(**options)(frames))


@pytest.mark.parametrize(
    ("segments", "channels", "fraction", "expected_fold"),
    [
        (4, 16, 1 / 8, 2),
        (3, 24, 1 / 8, 3),
        (5, 10, 1 / 4, 2),
        (2, 9, 1 / 8, 1),
        (1, 16, 1 / 8, 2),
        (4, 10, 0.3, 3),  # 3 does not divide 10: the slicing implementation
    ],
)
def test_shift_equals_the_definition_boundaries_included(
    segments, channels, fraction, expected_fold
):
    frames = np.random.default_rng(1).normal(size=(2 * segments, 3, 5, channels))
    frames = frames.astype("float32")
    layer = TemporalShift(segments, fraction)
    assert layer.fold(channels) == expected_fold
    out = keras.ops.convert_to_numpy(layer(frames))
    expected = reference_shift(frames, segments, expected_fold)
    np.testing.assert_array_equal(out, expected)
    clips_out = out.reshape(2, segments, 3, 5, channels)
    # Boundaries: the last segment's first fold and the first segment's second fold are 0.
    assert np.all(clips_out[:, -1, ..., :expected_fold] == 0)
    assert np.all(clips_out[:, 0, ..., expected_fold : 2 * expected_fold] == 0)
    np.testing.assert_array_equal(out[..., 2 * expected_fold :], frames[..., 2 * expected_fold :])


def test_default_fold_is_an_eighth_of_the_channels():
    frames = np.random.default_rng(2).normal(size=(8, 2, 2, 64)).astype("float32")
    np.testing.assert_array_equal(
        shifted(frames, num_segments=4), reference_shift(frames, 4, 64 // 8)
    )


@pytest.mark.parametrize(("channels", "fraction"), [(16, 1 / 8), (10, 0.3)])
def test_online_shift_only_looks_back(channels, fraction):
    frames = np.random.default_rng(3).normal(size=(6, 2, 2, channels)).astype("float32")
    fold = int(channels * fraction)
    out = shifted(frames, num_segments=3, fold_fraction=fraction, online=True)
    np.testing.assert_array_equal(out, reference_shift(frames, 3, fold, online=True))
    # Nothing from the future: changing the last frame changes no earlier output.
    changed = frames.copy()
    changed[2::3] += 1.0
    out_changed = shifted(changed, num_segments=3, fold_fraction=fraction, online=True)
    np.testing.assert_array_equal(
        out_changed.reshape(2, 3, -1)[:, :2], out.reshape(2, 3, -1)[:, :2]
    )


def test_zero_fold_is_the_identity():
    frames = np.random.default_rng(4).normal(size=(4, 2, 2, 7)).astype("float32")
    np.testing.assert_array_equal(shifted(frames, num_segments=2, fold_fraction=1 / 8), frames)
    np.testing.assert_array_equal(shifted(frames, num_segments=2, fold_fraction=0.0), frames)


def test_shift_has_no_weights_and_round_trips_its_config():
    layer = TemporalShift(8, 0.25, online=True, name="shift")
    layer.build((None, 4, 4, 16))
    assert layer.weights == []
    assert layer.count_params() == 0
    copy = TemporalShift.from_config(layer.get_config())
    assert (copy.num_segments, copy.fold_fraction, copy.online, copy.name) == (
        8,
        0.25,
        True,
        "shift",
    )


def test_invalid_fold_fraction_is_an_error():
    with pytest.raises(ConfigError, match=r"0\.75"):
        TemporalShift(8, 0.75)


def shift_layers(model):
    return [layer for layer in model.layers if isinstance(layer, TemporalShift)]


def consumers(model, tensor_layer_name):
    """Returns the names of the layers that take an output of layer `tensor_layer_name`."""
    names = []
    for layer in model.layers:
        for node in layer._inbound_nodes:
            for tensor in node.input_tensors:
                if producing_layer_name(tensor) == tensor_layer_name:
                    names.append(layer.name)
    return names


def test_blockres_shifts_only_the_residual_branch_of_every_resnet_block():
    backbone = build_backbone(backbone_spec("resnet50"), (32, 32, 3))
    shifted_backbone = insert_temporal_shift(backbone, backbone_spec("resnet50"), num_segments=2)
    shifts = shift_layers(shifted_backbone)
    assert len(shifts) == 3 + 4 + 6 + 3  # every bottleneck block of ResNet50
    for shift in shifts:
        block = shift.name.removesuffix("_shift")
        assert consumers(shifted_backbone, shift.name) == [f"{block}_1_conv"]
        inputs = shifted_backbone.get_layer(f"{block}_1_conv")._inbound_nodes[0].input_tensors
        assert producing_layer_name(inputs[0]) == shift.name
    # The identity / projection path takes the unshifted block input.
    projection = shifted_backbone.get_layer("conv3_block1_0_conv")
    assert producing_layer_name(projection._inbound_nodes[0].input_tensors[0]) == "conv2_block3_out"
    identity_add = shifted_backbone.get_layer("conv3_block2_add")
    add_inputs = [producing_layer_name(t) for t in identity_add._inbound_nodes[0].input_tensors]
    assert "conv3_block1_out" in add_inputs


@pytest.mark.slow
def test_resnet101_blockres_shifts_every_other_block_like_the_official_n_round_2():
    """ops/temporal_shift.py: n_round = 2 when layer3 has >= 23 blocks, and block i of each
    stage is shifted when i % n_round == 0: ResNet-101 (3, 4, 23, 3 blocks) gets 2 + 2 + 12
    + 2 = 18 shifts."""
    backbone = build_backbone(backbone_spec("resnet101"), (32, 32, 3))
    shifted_backbone = insert_temporal_shift(backbone, backbone_spec("resnet101"), num_segments=2)
    names = {shift.name.removesuffix("_shift") for shift in shift_layers(shifted_backbone)}
    assert len(names) == 18
    expected = {
        f"conv{stage}_block{number}"
        for stage, blocks in ((2, 3), (3, 4), (4, 23), (5, 3))
        for number in range(1, blocks + 1, 2)
    }
    assert names == expected
    assert "conv4_block2" not in names and "conv4_block23" in names


def test_block_placement_shifts_every_path_of_the_block():
    backbone = build_backbone(backbone_spec("resnet50"), (32, 32, 3))
    shifted_backbone = insert_temporal_shift(
        backbone, backbone_spec("resnet50"), 2, placement="block"
    )
    assert len(shift_layers(shifted_backbone)) == 16
    assert sorted(consumers(shifted_backbone, "conv3_block1_shift")) == [
        "conv3_block1_0_conv",
        "conv3_block1_1_conv",
    ]
    assert sorted(consumers(shifted_backbone, "conv3_block2_shift")) == [
        "conv3_block2_1_conv",
        "conv3_block2_add",
    ]


def test_mobilenet_v2_shifts_the_expansion_of_inverted_residual_blocks_only():
    backbone = build_backbone(backbone_spec("mobilenet_v2"), (32, 32, 3))
    shifted_backbone = insert_temporal_shift(
        backbone, backbone_spec("mobilenet_v2"), num_segments=2
    )
    residual_blocks = sorted(
        layer.name.removesuffix("_add") for layer in backbone.layers if layer.name.endswith("_add")
    )
    assert len(residual_blocks) == 10
    assert sorted(
        layer.name.removesuffix("_shift") for layer in shift_layers(shifted_backbone)
    ) == (residual_blocks)
    for block in residual_blocks:
        assert consumers(shifted_backbone, f"{block}_shift") == [f"{block}_expand"]


def test_the_test_network_is_shifted_as_mobilenet_v2_is():
    """Its residual blocks carry keras.applications' names, so TSM shifts their expansion
    (and the streaming export finds them) exactly as in MobileNetV2."""
    backbone = build_backbone(backbone_spec("test_mobilenet_v2"), (32, 32, 3))
    shifted_backbone = insert_temporal_shift(
        backbone, backbone_spec("test_mobilenet_v2"), num_segments=2
    )
    assert [layer.name for layer in shift_layers(shifted_backbone)] == [
        "block_2_shift",
        "block_3_shift",
    ]
    for block in ("block_2", "block_3"):
        assert consumers(shifted_backbone, f"{block}_shift") == [f"{block}_expand"]
    assert shifted_backbone.output_shape == (None, 64)


def test_other_backbones_are_a_clear_error():
    backbone = build_backbone(backbone_spec("densenet121"), (32, 32, 3))
    with pytest.raises(ConfigError) as caught:
        insert_temporal_shift(backbone, backbone_spec("densenet121"), 2)
    message = str(caught.value)
    assert "densenet121" in message
    assert "resnet50" in message and "mobilenet_v2" in message


def test_unknown_placement_is_an_error():
    backbone = build_backbone(backbone_spec("mobilenet_v2"), (32, 32, 3))
    with pytest.raises(ConfigError, match="'stage'"):
        insert_temporal_shift(backbone, backbone_spec("mobilenet_v2"), 2, placement="stage")
