"""Streaming inference with an online (one-directional) TSM: one frame in, one prediction out.

An online TemporalShift gives frame t the first `fold` channels of frame t-1 (zero for the
first frame). Run frame by frame, each shift layer keeps the previous frame's fold in a
state variable (Lin et al. 2019, online TSM), so a video is classified as it arrives at
the cost of one frame per step, and the step outputs equal the per-segment outputs of the
same model run on the whole clip.

The stateless step (`streaming_state_shapes`, `streaming_step`) is what every streaming
export serves; a causal clip network of a backbone family (MoViNet's stream sizes: the
registry's clip_stream) gives its own, whose logits are the clip model's on every frame so
far instead of one segment's.
"""

from __future__ import annotations

import keras
from keras import ops

from actrec.backbones.registry import clip_stream_modules
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
    shift_direction="online"), and keeps each shift's previous frame in state. Call
    `reset_streaming_state` before each video."""
    _online_shifts(model)
    backbone = segment_backbone(model)

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


# --- the stateless step: the state in and out as tensors (what an export serves) ------------


class ShiftStates:
    """The shift states of one streaming step: `incoming` (shift name -> previous fold,
    [B, h, w, fold]) read by the ExchangedTemporalShift layers, `outgoing` written by them."""

    def __init__(self):
        self.incoming: dict = {}
        self.outgoing: dict = {}


class ExchangedTemporalShift(keras.layers.Layer):
    """Online shift of one frame whose state is passed in and out through a ShiftStates:
    [B, H, W, C] -> [B, H, W, C], out[..., :fold] = states.incoming[name] and
    states.outgoing[name] = x[..., :fold]. Only for `streaming_step`; it has no config and
    is not saved."""

    def __init__(self, fold_fraction: float, states: ShiftStates, **kwargs):
        super().__init__(**kwargs)
        self.fold_fraction = float(fold_fraction)
        self.states = states

    def call(self, inputs):
        fold = int(inputs.shape[-1] * self.fold_fraction)
        if fold == 0:
            return inputs
        previous = ops.cast(self.states.incoming[self.name], inputs.dtype)  # [B, H, W, fold]
        self.states.outgoing[self.name] = inputs[..., :fold]
        return ops.concatenate([previous, inputs[..., fold:]], axis=-1)

    def compute_output_shape(self, input_shape):
        # Declared, so that building the functional graph never runs `call` (no states yet).
        return input_shape


def _clip_stream(model: keras.Model):
    """The family module that streams `model` (a causal clip network), or None."""
    return next((m for m in clip_stream_modules() if m.is_stream_network(model)), None)


def streaming_state_shapes(model: keras.Model) -> dict[str, tuple[int, ...]]:
    """The states of a streaming step, in graph order, name -> shape per stream (a batch adds
    a leading axis): an online TSM's shifts (shift name -> its previous-frame fold [h, w,
    fold]), or a causal clip network's own (e.g. MoViNet's buffers and pools)."""
    stream = _clip_stream(model)
    if stream is not None:
        return dict(stream.stream_state_shapes(model))
    shifts = _online_shifts(model)
    shapes = {}
    for layer in shifts:
        height, width, channels = layer.input.shape[1:]
        shapes[layer.name] = (int(height), int(width), layer.fold(int(channels)))
    return {name: shape for name, shape in shapes.items() if shape[-1] > 0}


def _online_shifts(model: keras.Model) -> list[TemporalShift]:
    backbone = segment_backbone(model)
    shifts = [layer for layer in backbone.layers if isinstance(layer, TemporalShift)]
    if not shifts or not all(layer.online for layer in shifts):
        raise ConfigError(
            f"model {model.name!r} is not an online TSM; train it with model.architecture=tsm "
            "and model.shift_direction=online (e.g. the synthetic-tsm-online recipe) to "
            "stream it frame by frame"
        )
    return shifts


def streaming_step(model: keras.Model):
    """A stateless function (frames [B, H, W, C] in the stored 0-255 scale, states: shift
    name -> [B, h, w, fold]) -> (logits [B, K], new states by name) that shares every
    weight of the online TSM `model`; zero states start a video (streaming_state_shapes
    gives their shapes). Step t's logits equal the clip model's segment t logits when the
    frames are the clip's segments in order; a causal clip network's, the clip model's
    logits on frames 0..t."""
    stream = _clip_stream(model)
    if stream is not None:
        clip_step = stream.stream_step(model)

        def frame_step(frames, incoming: dict):
            return clip_step(ops.expand_dims(frames, 1), dict(incoming))  # [B, 1, H, W, C]

        return frame_step
    _online_shifts(model)
    states = ShiftStates()
    backbone = segment_backbone(model)

    def exchanged_layer(layer):
        if isinstance(layer, TemporalShift):
            return ExchangedTemporalShift(layer.fold_fraction, states, name=layer.name)
        return layer  # shared: the trained weights themselves

    streaming_backbone = keras.models.clone_model(backbone, clone_function=exchanged_layer)
    preprocessing = (
        model.get_layer("preprocessing")
        if "preprocessing" in [layer.name for layer in model.layers]
        else None
    )
    classifier = model.get_layer("classifier")

    def step(frames, incoming: dict):
        states.incoming, states.outgoing = dict(incoming), {}
        x = frames if preprocessing is None else preprocessing(frames)
        logits = classifier(streaming_backbone(x, training=False))  # [B, K]
        return logits, dict(states.outgoing)

    return step
