"""Layer-wise learning-rate decay: a transformer's lower layers learn more slowly.

For a network of L blocks and a decay d (train.layer_decay), every trainable variable has a
layer id k and its rate is multiplied by d ** (L + 1 - k):

    k = 0        the embeddings (every layer before the first block: the tubelet / patch
                 embedding, a position table that has weights)          d ** (L + 1)
    k = i + 1    block i (0-based: the layer named block_i)              d ** (L - i)
    k = L + 1    every layer after the last block (fc_norm, the head)    1

(a layer between two blocks takes the id of the block before it).
which is the authors' LayerDecayValueAssigner (MCG-NJU/VideoMAE run_class_finetuning.py:
values d ** (num_layers + 1 - i) for i in 0 .. num_layers + 1; optim_factory.py
get_num_layer_for_vit: pos_embed and patch_embed 0, blocks.N N + 1, the rest the last),
from BEiT (Bao et al. 2022) and MAE's fine-tuning. The blocks are the model's layers named
`block_<N>` (actrec.backbones.videomae.build names them so), found among its leaf layers
with nested models expanded, in layer order.

This module imports Keras only inside `variable_layer_ids`.
"""

from __future__ import annotations

import re

from actrec.errors import ConfigError

BLOCK_NAME = re.compile(r"block_(\d+)")
"""A transformer block's layer name: block_0 ... block_{L-1}."""


def layer_rate_scales(depth: int, decay: float) -> list[float]:
    """The rate multiplier of layer ids 0 .. depth + 1: decay ** (depth + 1 - k)."""
    return [decay ** (depth + 1 - layer) for layer in range(depth + 2)]


def _leaf_layers(model) -> list:
    import keras

    found = []
    for layer in model.layers:
        found.extend(_leaf_layers(layer) if isinstance(layer, keras.Model) else [layer])
    return found


def variable_layer_ids(model) -> tuple[int, dict[int, int]]:
    """(depth L, id(variable) -> layer id in 0 .. L + 1) for `model`'s trainable variables.

    ConfigError when the model has no layer named block_N, or its blocks are not numbered
    0 .. L - 1 in layer order."""
    layers = _leaf_layers(model)
    blocks = [
        (position, int(match.group(1)))
        for position, layer in enumerate(layers)
        if (match := BLOCK_NAME.fullmatch(layer.name))
    ]
    if not blocks:
        raise ConfigError(
            f"train.layer_decay needs a transformer (layers named block_0, block_1, ...) and "
            f"model {model.name!r} has none; use train.layer_decay=1 for this network"
        )
    numbers = [number for _, number in blocks]
    if numbers != list(range(len(numbers))):
        raise ConfigError(
            f"train.layer_decay: model {model.name!r} has blocks {numbers} in layer order, "
            f"not block_0 .. block_{len(numbers) - 1}; use train.layer_decay=1"
        )
    depth, last = len(blocks), blocks[-1][0]
    ids: dict[int, int] = {}
    layer_id = 0  # before the first block: the embeddings
    for position, layer in enumerate(layers):
        if match := BLOCK_NAME.fullmatch(layer.name):
            layer_id = int(match.group(1)) + 1
        elif position > last:
            layer_id = depth + 1  # a layer between blocks keeps the block before it's id
        for variable in layer.trainable_weights:
            ids.setdefault(id(variable), layer_id)
    return depth, ids
