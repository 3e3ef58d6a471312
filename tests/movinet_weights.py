"""MoViNet weights drawn from a seed (tests/backbones/test_movinet_stream.py,
tests/export/test_movinet_streaming_export.py): a random MoViNet's logits barely depend on
its input, and the Model Garden starts every ReZero scale at 0, so the tests draw every
weight."""

from __future__ import annotations

import numpy as np


def seeded(network, seed: int = 0):
    """Every weight drawn from `seed`: kernels and biases normal, BatchNorm variances in
    [1, 2], gammas in [0.8, 1.3], ReZero and positional scales in [0.5, 1]."""
    rng = np.random.default_rng(seed)
    for weight in network.weights:
        shape = tuple(weight.shape)
        if "variance" in weight.path:
            value = rng.uniform(1.0, 2.0, shape)
        elif "gamma" in weight.path:
            value = rng.uniform(0.8, 1.3, shape)
        elif not shape:
            value = rng.uniform(0.5, 1.0, shape)
        else:
            value = rng.normal(0.0, 1.3 / np.sqrt(max(1, int(np.prod(shape[:-1])))), shape)
        weight.assign(value.astype("float32"))
    return network
