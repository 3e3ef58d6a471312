"""Two-stream score fusion on NumPy arrays, free of Keras so that fusing saved scores
(`actrec eval --fuse` on evaluated runs) imports no deep-learning framework."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from actrec.errors import ConfigError

TSN_STREAM_WEIGHTS = (1.0, 1.5)  # RGB : flow
AVERAGES = ("logits", "softmax")  # what is averaged over views and fused over streams
DEFAULT_AVERAGE = "logits"


def check_average(average: str) -> str:
    if average not in AVERAGES:
        raise ConfigError(
            f"score average {average!r} is not valid; use logits (the official TSN / TSM "
            "evaluation: pre-softmax scores) or softmax (probabilities)"
        )
    return average


def checked_fusion_weights(weights: Sequence[float], streams: int) -> tuple[float, ...]:
    weights = tuple(float(weight) for weight in weights)
    if len(weights) != streams:
        raise ConfigError(f"{streams} streams need {streams} fusion weights, got {list(weights)}")
    if any(weight < 0 for weight in weights) or sum(weights) <= 0:
        raise ConfigError(
            f"fusion weights must be non-negative with a positive sum, got {list(weights)}"
        )
    return weights


def fuse_scores(scores: Sequence[np.ndarray], weights: Sequence[float] = TSN_STREAM_WEIGHTS):
    """Returns sum_i w_i * scores_i / sum_i w_i for scores [N, K] of each stream (logits or
    softmax; dividing by the weights' sum keeps the scale and does not change a ranking)."""
    weights = checked_fusion_weights(weights, len(scores))
    shapes = {np.shape(score) for score in scores}
    if len(shapes) != 1:
        raise ConfigError(f"stream scores must have one shape [N, K], got {sorted(shapes)}")
    total = sum(
        weight * np.asarray(score, dtype=np.float64)
        for weight, score in zip(weights, scores, strict=True)
    )
    return total / sum(weights)
