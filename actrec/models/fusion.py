"""Two-stream fusion: a weighted average of the streams' softmax scores (TSN: RGB 1, flow 1.5).

`fuse_scores` fuses saved per-video scores (evaluation); `build_two_stream_model` joins two
trained segment models into one model for evaluation and export.
"""

from __future__ import annotations

from collections.abc import Sequence

import keras
import numpy as np
from keras import ops

from actrec.errors import ConfigError

TSN_STREAM_WEIGHTS = (1.0, 1.5)  # RGB : flow


def _checked_weights(weights: Sequence[float], streams: int) -> tuple[float, ...]:
    weights = tuple(float(weight) for weight in weights)
    if len(weights) != streams:
        raise ConfigError(f"{streams} streams need {streams} fusion weights, got {list(weights)}")
    if any(weight < 0 for weight in weights) or sum(weights) <= 0:
        raise ConfigError(
            f"fusion weights must be non-negative with a positive sum, got {list(weights)}"
        )
    return weights


def fuse_scores(scores: Sequence[np.ndarray], weights: Sequence[float] = TSN_STREAM_WEIGHTS):
    """Returns sum_i w_i * scores_i / sum_i w_i for softmax scores [N, K] of each stream."""
    weights = _checked_weights(weights, len(scores))
    shapes = {np.shape(score) for score in scores}
    if len(shapes) != 1:
        raise ConfigError(f"stream scores must have one shape [N, K], got {sorted(shapes)}")
    total = sum(
        weight * np.asarray(score, dtype=np.float64)
        for weight, score in zip(weights, scores, strict=True)
    )
    return total / sum(weights)


@keras.saving.register_keras_serializable(package="actrec")
class WeightedScoreFusion(keras.layers.Layer):
    """Per-stream logits [B, K] each -> weighted average of their softmax [B, K]."""

    def __init__(self, stream_weights: Sequence[float] = TSN_STREAM_WEIGHTS, **kwargs):
        super().__init__(**kwargs)
        self.stream_weights = [float(weight) for weight in stream_weights]

    def call(self, inputs):
        weights = _checked_weights(self.stream_weights, len(inputs))
        total = sum(
            weight * ops.softmax(logits, axis=-1)
            for weight, logits in zip(weights, inputs, strict=True)
        )
        return total / sum(weights)

    def compute_output_shape(self, input_shape):
        return input_shape[0]

    def get_config(self):
        config = super().get_config()
        config.update(stream_weights=self.stream_weights)
        return config


def build_two_stream_model(
    rgb_model: keras.Model,
    flow_model: keras.Model,
    stream_weights: Sequence[float] = TSN_STREAM_WEIGHTS,
    name: str = "two_stream",
) -> keras.Model:
    """Returns a model {"rgb": [B, T, H, W, 3], "flow": [B, T, H, W, 2L]} -> fused softmax
    scores [B, K], from two trained segment models (logits out) sharing their classes."""
    _checked_weights(stream_weights, 2)
    rgb_classes, flow_classes = rgb_model.output_shape[-1], flow_model.output_shape[-1]
    if rgb_classes != flow_classes:
        raise ConfigError(
            f"the RGB model has {rgb_classes} classes and the flow model {flow_classes}: "
            "fuse models trained on the same classes"
        )
    rgb = keras.Input(rgb_model.input_shape[1:], name="rgb")
    flow = keras.Input(flow_model.input_shape[1:], name="flow")
    scores = WeightedScoreFusion(stream_weights, dtype="float32", name="fusion")(
        [rgb_model(rgb), flow_model(flow)]
    )
    return keras.Model({"rgb": rgb, "flow": flow}, scores, name=name)
