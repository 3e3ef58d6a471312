"""Streaming inference with an online (one-directional) TSM: one frame in, one prediction out.

An online TemporalShift gives frame t the first `fold` channels of frame t-1 (zero for the
first frame). Run frame by frame, each shift layer keeps the previous frame's fold in a
state variable (Lin et al. 2019, online TSM), so a video is classified as it arrives at
the cost of one frame per step, and the step outputs equal the per-segment outputs of the
same model run on the whole clip.
"""

from __future__ import annotations

import keras
from keras import ops

from actrec.errors import ConfigError
from actrec.models.segment_model import segment_backbone
from actrec.models.temporal_shift import TemporalShift


@keras.saving.register_keras_serializable(package="actrec")
class StreamingTemporalShift(keras.layers.Layer):
    """Online shift for one frame per call: [B, H, W, C] -> [B, H, W, C].

    out[..., :fold] = the previous call's x[..., :fold] (zeros after `reset_state`),
    out[..., fold:] = x[..., fold:]. The state is a non-trainable variable of batch size B.
    """

    def __init__(self, fold_fraction: float, batch_size: int, **kwargs):
        super().__init__(**kwargs)
        self.fold_fraction = float(fold_fraction)
        self.batch_size = int(batch_size)

    def build(self, input_shape):
        channels = input_shape[-1]
        self.fold = int(channels * self.fold_fraction)
        self.previous_fold = self.add_weight(
            shape=(self.batch_size, *input_shape[1:-1], self.fold),
            initializer="zeros",
            trainable=False,
            name="previous_fold",
        )

    def call(self, inputs):
        if self.fold == 0:
            return inputs
        previous = ops.cast(self.previous_fold, inputs.dtype)  # [B, H, W, fold]
        outputs = ops.concatenate([previous, inputs[..., self.fold :]], axis=-1)
        self.previous_fold.assign(ops.cast(inputs[..., : self.fold], self.previous_fold.dtype))
        return outputs

    def reset_state(self):
        """Forgets the previous frame (call before each new video)."""
        self.previous_fold.assign(ops.zeros_like(self.previous_fold))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(fold_fraction=self.fold_fraction, batch_size=self.batch_size)
        return config


def build_streaming_model(model: keras.Model, batch_size: int = 1) -> keras.Model:
    """Returns a model frames [B, H, W, C] -> per-frame logits [B, K] that shares every
    weight of `model`, an online TSM from build_segment_model(..., architecture="tsm",
    shift_online=True), and keeps each shift's previous frame in state. Call
    `reset_streaming_state` before each video."""
    backbone = segment_backbone(model)
    shifts = [layer for layer in backbone.layers if isinstance(layer, TemporalShift)]
    if not shifts or not all(layer.online for layer in shifts):
        raise ConfigError(
            f"model {model.name!r} is not an online TSM; build it with architecture='tsm' "
            "and shift_online=True to stream it frame by frame"
        )

    def streaming_layer(layer):
        if isinstance(layer, TemporalShift):
            return StreamingTemporalShift(layer.fold_fraction, batch_size, name=layer.name)
        return layer  # shared: the streaming model uses the trained weights themselves

    streaming_backbone = keras.models.clone_model(backbone, clone_function=streaming_layer)
    frame_shape = model.input_shape[2:]  # [H, W, C]
    frames = keras.Input(frame_shape, batch_size=batch_size, name="frame")  # [B, H, W, C]
    x = frames
    if "preprocessing" in [layer.name for layer in model.layers]:
        x = model.get_layer("preprocessing")(x)
    x = streaming_backbone(x)  # [B, F]
    logits = model.get_layer("classifier")(x)  # [B, K]
    return keras.Model(frames, logits, name=f"{model.name}_streaming")


def reset_streaming_state(model: keras.Model) -> None:
    """Zeros the previous-frame state of every StreamingTemporalShift in `model`."""
    for layer in model.layers:
        if isinstance(layer, StreamingTemporalShift):
            layer.reset_state()
        elif isinstance(layer, keras.Model):
            reset_streaming_state(layer)
