"""A checkpoint's tensor values checked before they become a run's weights: a converted
model with NaN or infinite weights, or a BatchNorm with a negative running variance (whose
square root is NaN), poisons every step that trains or evaluates it, far from its cause.

The sizes the file declares are checked before anything is read
(actrec.published.storage_sizes); these checks read the values.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from actrec.errors import WeightsError

VARIANCE_SUFFIX = "running_var"
"""PyTorch BatchNorm's running variance: `<module>.running_var`."""
SHOWN_TENSORS = 3
FIX = "this checkpoint would poison training; download it again or check its source"


def check_tensor_values(path: Path, state_dict: dict[str, np.ndarray]) -> None:
    """WeightsError naming the tensors of `state_dict` (read from `path`) that hold NaN or
    infinite values, or a BatchNorm running variance below zero."""
    non_finite = {
        key: count
        for key, array in state_dict.items()
        if array.dtype.kind in "fc" and (count := int(array.size - np.isfinite(array).sum()))
    }
    if non_finite:
        raise WeightsError(_message(path, non_finite, "NaN / inf values"))
    negative = {
        key: count
        for key, array in state_dict.items()
        if key.endswith(VARIANCE_SUFFIX)
        and array.dtype.kind == "f"
        and (count := int((array < 0).sum()))
    }
    if negative:
        raise WeightsError(
            _message(path, negative, "negative BatchNorm running variances (a variance is >= 0)")
        )


def _message(path: Path, counts: dict[str, int], problem: str) -> str:
    (first, count), *others = counts.items()
    text = f"{path}: tensor {first!r} holds {count} {problem}"
    if others:
        names = ", ".join(repr(key) for key, _ in others[:SHOWN_TENSORS])
        more = ", ..." if len(others) > SHOWN_TENSORS else ""
        text += f", and {len(others)} other tensors too ({names}{more})"
    return f"{text}; {FIX}"
