"""Where TSM shifts a ResNet (Keras's layer names: keras.applications' and the torchvision
layout's alike): each bottleneck `convK_blockM`, closed by `convK_blockM_add`, its residual
branch starting at `convK_blockM_1_conv`. A "blockres" ResNet whose fourth stage has 23
blocks or more (ResNet-101, ResNet-152) shifts every other block of each stage, the first
included (`n_round = 2`, mit-han-lab/temporal-shift-module ops/temporal_shift.py lines
120-132): 18 shifts in ResNet-101, 26 in ResNet-152, 16 (every block) in ResNet-50.
Standard library only."""

from __future__ import annotations

import re

from actrec.backbones.spec import ShiftBlocks

DEEP_STAGE_BLOCKS = 23
"""A ResNet whose fourth stage (Keras `conv4`, PyTorch `layer3`) has at least this many
blocks shifts every other block under "blockres" (the official `n_round = 2`)."""
_BLOCK_NUMBER = re.compile(r"^conv\d+_block(\d+)$")


def every_other_block(blocks: set[str]) -> set[str]:
    """The ResNet blocks the official "blockres" code shifts: with a deep fourth stage, the
    first, third, ... block of each stage (convK_block1, convK_block3, ...), else all."""
    if sum(block.startswith("conv4_") for block in blocks) < DEEP_STAGE_BLOCKS:
        return blocks
    return {
        block
        for block in blocks
        if (match := _BLOCK_NUMBER.match(block)) and int(match.group(1)) % 2 == 1
    }


RESNET_SHIFT = ShiftBlocks(
    name="resnet",
    block=re.compile(r"^(conv\d+_block\d+)_"),
    residual_add=re.compile(r"^(conv\d+_block\d+)_add$"),
    first_branch_convolution="_1_conv",
    blockres_blocks=every_other_block,
)
