"""Where TSM shifts a MobileNetV2 (Keras's layer names, both layouts): the inverted residual
blocks `block_M` whose output is added to their input (`block_M_add`), their residual branch
starting at `block_M_expand`. Standard library only."""

from __future__ import annotations

import re

from actrec.backbones.spec import ShiftBlocks

MOBILENET_V2_SHIFT = ShiftBlocks(
    name="mobilenet_v2",
    block=re.compile(r"^(block_\d+)_"),
    residual_add=re.compile(r"^(block_\d+)_add$"),
    first_branch_convolution="_expand",
)
