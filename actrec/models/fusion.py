"""Two-stream fusion: a weighted average of the streams' scores (TSN: RGB 1, flow 1.5).

The official evaluations fuse pre-softmax class scores: TSN's tools/eval_scores.py sums the
streams' weighted `fc-action` outputs (normalization=False, lines 33-38) and TSM's
test_models.py averages logits unless --softmax (lines 240-244, 273-275). AVERAGES names
the two choices: "logits" (the sources') and "softmax" (average probabilities).

`fuse_scores` (actrec.models.score_fusion, free of Keras) fuses saved per-video scores
(evaluation); `build_two_stream_model` joins two trained segment models into one model for
evaluation and export.
"""

from __future__ import annotations

from collections.abc import Sequence

import keras
from keras import ops

from actrec.errors import ConfigError
from actrec.models.score_fusion import (
    DEFAULT_AVERAGE,
    TSN_STREAM_WEIGHTS,
    check_average,
    checked_fusion_weights,
)

__all__ = ["WeightedScoreFusion", "build_two_stream_model"]


@keras.saving.register_keras_serializable(package="actrec")
class WeightedScoreFusion(keras.layers.Layer):
    """Per-stream logits [B, K] each -> fused probabilities [B, K].

    average "logits": softmax of the weighted average of the logits (the official fusion);
    "softmax": the weighted average of the streams' softmax. (Models saved before the
    choice existed fused softmax scores; their config has no `average` and reloads so.)
    """

    def __init__(
        self,
        stream_weights: Sequence[float] = TSN_STREAM_WEIGHTS,
        average: str = "softmax",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.stream_weights = [float(weight) for weight in stream_weights]
        self.average = check_average(average)

    def call(self, inputs):
        weights = checked_fusion_weights(self.stream_weights, len(inputs))
        if self.average == "logits":
            total = sum(weight * logits for weight, logits in zip(weights, inputs, strict=True))
            return ops.softmax(total / sum(weights), axis=-1)
        total = sum(
            weight * ops.softmax(logits, axis=-1)
            for weight, logits in zip(weights, inputs, strict=True)
        )
        return total / sum(weights)

    def compute_output_shape(self, input_shape):
        return input_shape[0]

    def get_config(self):
        config = super().get_config()
        config.update(stream_weights=self.stream_weights, average=self.average)
        return config


def build_two_stream_model(
    rgb_model: keras.Model,
    flow_model: keras.Model,
    stream_weights: Sequence[float] = TSN_STREAM_WEIGHTS,
    name: str = "two_stream",
    average: str = DEFAULT_AVERAGE,
) -> keras.Model:
    """Returns a model {"rgb": [B, T, H, W, 3], "flow": [B, T, H, W, 2L]} -> fused
    probabilities [B, K] (see WeightedScoreFusion), from two trained segment models (logits
    out) sharing their classes."""
    checked_fusion_weights(stream_weights, 2)
    rgb_classes, flow_classes = rgb_model.output_shape[-1], flow_model.output_shape[-1]
    if rgb_classes != flow_classes:
        raise ConfigError(
            f"the RGB model has {rgb_classes} classes and the flow model {flow_classes}: "
            "fuse models trained on the same classes"
        )
    rgb = keras.Input(rgb_model.input_shape[1:], name="rgb")
    flow = keras.Input(flow_model.input_shape[1:], name="flow")
    scores = WeightedScoreFusion(stream_weights, average, dtype="float32", name="fusion")(
        [rgb_model(rgb), flow_model(flow)]
    )
    return keras.Model({"rgb": rgb, "flow": flow}, scores, name=name)
