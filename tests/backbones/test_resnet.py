"""The resnet family's own: where TSM shifts a ResNet, by Keras's layer names."""

from __future__ import annotations

from actrec.backbones.registry import FAMILIES
from actrec.backbones.resnet.shift import DEEP_STAGE_BLOCKS, RESNET_SHIFT, every_other_block


def stage_blocks(stage: int, count: int) -> set[str]:
    return {f"conv{stage}_block{block}" for block in range(1, count + 1)}


def test_a_resnet_block_is_found_by_its_layer_names():
    assert RESNET_SHIFT.block.match("conv3_block2_1_conv").group(1) == "conv3_block2"
    assert RESNET_SHIFT.residual_add.match("conv4_block23_add").group(1) == "conv4_block23"
    assert RESNET_SHIFT.residual_add.match("conv4_block23_1_conv") is None
    assert FAMILIES["resnet"].shift is RESNET_SHIFT


def test_blockres_shifts_every_other_block_of_each_stage_only_when_the_fourth_is_deep():
    resnet50 = stage_blocks(2, 3) | stage_blocks(3, 4) | stage_blocks(4, 6) | stage_blocks(5, 3)
    assert every_other_block(resnet50) == resnet50
    resnet101 = resnet50 | stage_blocks(4, DEEP_STAGE_BLOCKS)
    chosen = every_other_block(resnet101)
    assert len(chosen) == 18  # TSM's n_round = 2 over ResNet-101's 3 + 4 + 23 + 3 blocks
    assert {"conv2_block1", "conv2_block3", "conv4_block23"} <= chosen
    assert "conv4_block2" not in chosen
