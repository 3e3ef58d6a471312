"""`train.class_balance`: the training split's clips per class, the loss weights they give
("weights") and the line a run prints about them at its start.

"weights": class c of n_c training clips (N in all, C classes present) weighs
w_c = N / (C * n_c), so the mean weight over the training examples is 1 (the loss keeps its
scale) and every class contributes the same total; a class without clips weighs 0 (it is
never drawn). "sampling" draws the classes equally often instead
(actrec.data.input.balanced_order).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np

from actrec.data.format.manifest import read_manifest, split_videos


def training_class_counts(
    prepared_dir: Path, split: str, num_classes: int, held_out: Collection[str] = ()
) -> tuple[int, ...]:
    """The clips of each class [num_classes] in the prepared `split`, less the validation
    hold-out (video ids); unlabelled clips (label -1) are not counted."""
    held_out = set(held_out)
    counts = [0] * num_classes
    for video in split_videos(prepared_dir, read_manifest(prepared_dir), split):
        label = int(video["label"])
        if 0 <= label < num_classes and video["id"] not in held_out:
            counts[label] += 1
    return tuple(counts)


def class_weights(counts: Sequence[int]) -> np.ndarray:
    """float32 [classes] inverse-frequency weights N / (C * n_c) of the clips per class
    (C: classes with clips; 0 for a class without), mean 1 over the examples."""
    counts = np.asarray(counts, dtype=np.float64)
    present = counts > 0
    if not present.any():
        return np.zeros(counts.shape, np.float32)
    weights = np.zeros(counts.shape, np.float64)
    weights[present] = counts.sum() / (present.sum() * counts[present])
    return weights.astype(np.float32)


def balance_summary(setting: str, counts: Sequence[int]) -> str:
    """One line on what `train.class_balance` does with the clips per class."""
    present = [count for count in counts if count > 0]
    if not present:
        return f"class balance: {setting} (no labelled training clips)"
    spread = f"from {min(present)} to {max(present)} clips a class"
    if setting == "weights":
        weights = class_weights(counts)
        used = weights[np.asarray(counts) > 0]
        return (
            f"class balance: weights, {spread} (loss weights {used.min():.2g}-{used.max():.2g}, "
            "mean 1 over the clips)"
        )
    if setting == "sampling":
        per_class = sum(present) / len(present)
        return (
            f"class balance: sampling, {spread} (each class drawn ~{per_class:.3g} times an "
            f"epoch of {sum(present)})"
        )
    return f"class balance: none, {spread} (as read)"
