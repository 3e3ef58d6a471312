"""The seeded value of every variable of the Model Garden's reference MoViNets, by its
name: the one rule the reference writer (in tf-models-official's environment) assigns
before writing its checkpoints, and the suite applies to write the same checkpoints again
from tests/assets/movinet-reference (the keys, shapes, object graphs and tensor digests the
writer read back from what the Model Garden wrote). numpy only: it is imported by both
environments.

A value depends on (the case's seed, the variable's name, its shape) and nothing else, not
on the order the model lists its variables in, so that the suite can draw it from the
object graph's `full_name` alone. Only `Generator.random` is used (uniform doubles from
PCG64's raw bits), the draw numpy keeps stable; the asset's digests catch any change.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

PIN = "tf-models-official==2.20.0"
"""The Model Garden release the asset was written by."""


def _uniform(seed: int, name: str, shape: tuple[int, ...], low: float, high: float):
    salt = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")
    unit = np.random.default_rng([seed, salt]).random(shape)
    return low + (high - low) * unit


def drawn_value(seed: int, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """float32 array of `shape` for the variable called `name` (a tf_keras name without
    ":0", e.g. "stem/stem/bn/gamma"), scaled so that activations stay of order one
    (endpoints of a few units, logits of about one whose two clips differ by 1e-2, so that
    float32 rounding stays below 1e-5): kernels of standard deviation 1.3 / sqrt(fan-in)
    (the classifier head's 1 / sqrt(fan-in)), BatchNorm gammas in [0.8, 1.3], variances in
    [1, 2], means, betas and biases of deviation 0.1, scalars (ReZero and positional scales)
    in [0.5, 1]. Spreads are uniform: a uniform in [-a, a] has deviation a / sqrt(3)."""
    shape = tuple(int(size) for size in shape)
    if "moving_variance" in name:
        value = _uniform(seed, name, shape, 1.0, 2.0)
    elif "gamma" in name:
        value = _uniform(seed, name, shape, 0.8, 1.3)
    elif not shape:
        value = _uniform(seed, name, shape, 0.5, 1.0)
    else:
        if "beta" in name or "moving_mean" in name or "bias" in name:
            deviation = 0.1
        else:
            fan_in = np.prod(shape[:2]) if "depthwise_kernel" in name else np.prod(shape[:-1])
            deviation = (1.0 if "classifier_head" in name else 1.3) / np.sqrt(fan_in)
        half_width = deviation * np.sqrt(3.0)
        value = _uniform(seed, name, shape, -half_width, half_width)
    return np.asarray(value, np.float32)


def tensor_digest(array: np.ndarray) -> str:
    """The first 16 hex digits of the sha256 of an array's dtype, shape and C-order bytes."""
    array = np.ascontiguousarray(array)
    header = f"{array.dtype.str}{array.shape}".encode()
    return hashlib.sha256(header + array.tobytes()).hexdigest()[:16]


def writer_digest() -> str:
    """The first 16 hex digits of the sha256 of the writer, this rule and the pin: the
    asset records the one it was written by, and the suite refuses a stale asset."""
    here = Path(__file__).parent
    files = (here / "backbones" / "movinet_reference_writer.py", Path(__file__))
    text = b"".join(file.read_bytes() for file in files)
    return hashlib.sha256(text + PIN.encode()).hexdigest()[:16]
