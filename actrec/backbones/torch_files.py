"""The registry entry of a PyTorch ImageNet file (a PyTorch-layout family's weights).
Standard library only."""

from __future__ import annotations

import re

from actrec.backbones.spec import WeightsFile


def pytorch_weights_file(name: str, url: str) -> WeightsFile:
    """Backbone `name`'s ImageNet file at `url`, whose name ends in the first hex digits of
    its SHA-256 (torch.hub's convention: "resnet50-0676ba61.pth"); the store keeps its
    conversion to Keras weights, `{name}_notop.weights.h5`."""
    source_file_name = url.rsplit("/", 1)[-1].split("?")[0]
    hash_prefix = re.search(r"-([a-f0-9]+)\.", source_file_name).group(1)
    return WeightsFile(
        f"{name}_notop.weights.h5",
        url,
        "sha256-prefix",
        hash_prefix,
        source_file_name=source_file_name,
    )
