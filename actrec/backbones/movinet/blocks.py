"""MoViNet's blocks in Keras 3 (keras.ops only): squeeze-excitation with its cumulative
pooling, the inverted bottleneck with its ReZero scale, and the head's projection and
pooling.

Shapes: [B, T, H, W, C]. A block's `with_states(x, states, frames_before)` takes its states
(a dict: "stream_buffer" [B, kt - 1, h, w, c], "pool_buffer" [B, 1, 1, 1, c]; missing or
None: zeros, the start of a video) and the frames seen before `x`, frames_before [B, 1]
float32, and returns (outputs, new states). `call(x)` is with_states with no states: a whole
clip from its first frame. (Not `forward`: a Keras layer is a torch.nn.Module under the
PyTorch backend, whose forward is the layer's call.)
"""

from __future__ import annotations

import keras
import numpy as np
from keras import layers, ops

from actrec.backbones.movinet.layers import MovinetConv, activation_of, same_padding
from actrec.backbones.tflite_forms import for_int8, for_tflite


def make_divisible(value: float, divisor: int = 8) -> int:
    """The Model Garden's channel rounding (nn_layers.make_divisible): to the nearest
    multiple of `divisor`, at least `divisor`, never more than 10 % below `value`."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return int(rounded + divisor if rounded < 0.9 * value else rounded)


def _frames_before(x, frames_before):
    """[B, 1] float32 frames before x (zeros when None)."""
    if frames_before is None:
        return ops.zeros_like(x[:, 0, 0, 0, :1])
    return ops.cast(frames_before, x.dtype)


def pooled_frames(space, pool_sum, frames_before, causal: bool):
    """Each frame's spatial mean space [B, T, 1, 1, C] averaged over time: causal, the
    cumulative mean up to each frame ([B, T, 1, 1, C]); else the mean of every frame so
    far ([B, 1, 1, 1, C]). `pool_sum` [B, 1, 1, 1, C] is the sum of the means of the
    frames before (None: zero); returns (averages, the new sum)."""
    frames = space.shape[1]
    before = ops.reshape(frames_before, (-1, 1, 1, 1, 1))
    if causal:
        sums = ops.cumsum(space, axis=1)
        if pool_sum is not None:
            sums = sums + ops.cast(pool_sum, sums.dtype)
        counts = before + ops.reshape(ops.arange(1, frames + 1, dtype=sums.dtype), (1, -1, 1, 1, 1))
        if for_int8():  # an int8 TFLite step: one DIV for all blocks, not one each
            return sums * (1.0 / counts), sums[:, -1:]
        return sums / counts, sums[:, -1:]
    total = ops.sum(space, axis=1, keepdims=True)
    if pool_sum is not None:
        total = total + ops.cast(pool_sum, total.dtype)
    return total / (before + frames), total


@keras.saving.register_keras_serializable(package="actrec")
class SqueezeExcitation(layers.Layer):
    """x [B, T, H, W, C] -> x * gate: the gate from the clip's pooled channels (se_type
    "3d": spatio-temporal, cumulative when causal; "2plus3d": that and each frame's spatial
    mean, concatenated), `reduce` (Dense, activation) then `expand` (Dense, gating)."""

    def __init__(
        self,
        hidden_filters: int,
        se_type: str = "3d",
        causal: bool = False,
        activation: str = "swish",
        gating_activation: str = "sigmoid",
        positional_encoding: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.hidden_filters, self.se_type, self.causal = int(hidden_filters), se_type, causal
        self.activation, self.gating_activation = activation, gating_activation
        self.positional_encoding = positional_encoding

    def build(self, input_shape):
        channels = int(input_shape[-1])
        pooled = 2 * channels if self.se_type == "2plus3d" else channels
        self.reduce = layers.Dense(self.hidden_filters, name="se_reduce")
        self.reduce.build((None, pooled))
        self.expand = layers.Dense(channels, name="se_expand")
        self.expand.build((None, self.hidden_filters))
        self.position_scale = None
        if self.positional_encoding:
            self.position_scale = self.add_weight((), "zeros", name="position_scale")

    def call(self, inputs):
        return self.with_states(inputs)[0]

    def with_states(self, inputs, pool_sum=None, frames_before=None):
        """(gated inputs, the new pool sum [B, 1, 1, 1, C])."""
        before = _frames_before(inputs, frames_before)
        space = ops.mean(inputs, axis=(2, 3), keepdims=True)  # [B, T, 1, 1, C]
        pooled, new_sum = pooled_frames(space, pool_sum, before, self.causal)
        if self.se_type == "2plus3d":
            pooled = ops.concatenate([ops.broadcast_to(pooled, ops.shape(space)), space], -1)
        if self.position_scale is not None:
            pooled = pooled + self.position_scale * self._encoding(before, pooled)
        hidden = activation_of(self.activation)(self.reduce(pooled))
        gate = activation_of(self.gating_activation)(self.expand(hidden))
        return inputs * gate, new_sum

    @staticmethod
    def _encoding(frames_before, pooled):
        """The Model Garden's PositionalEncoding of frames frames_before ... + T - 1:
        [sin of the even channels' angles, cos of the odd ones'] -> [B, T, 1, 1, C]."""
        frames, channels = pooled.shape[1], pooled.shape[-1]
        index = np.arange(channels)
        angles = 1.0 / np.power(10000.0, 2 * (index // 2) / channels)
        positions = ops.reshape(frames_before, (-1, 1, 1)) + ops.reshape(
            ops.arange(frames, dtype=pooled.dtype), (1, -1, 1)
        )  # [B, T, 1]
        even = positions * ops.cast(angles[0::2][None, None], pooled.dtype)
        odd = positions * ops.cast(angles[1::2][None, None], pooled.dtype)
        encoding = ops.concatenate([ops.sin(even), ops.cos(odd)], axis=-1)  # [B, T, C]
        return ops.reshape(encoding, (-1, frames, 1, 1, channels))

    def get_config(self):
        return {
            **super().get_config(),
            "hidden_filters": self.hidden_filters,
            "se_type": self.se_type,
            "causal": self.causal,
            "activation": self.activation,
            "gating_activation": self.gating_activation,
            "positional_encoding": self.positional_encoding,
        }


def _window_counts(height: int, width: int) -> np.ndarray:
    """[ceil(H/2), ceil(W/2)] the real pixels under each 3x3 window of stride 2, SAME
    padding (TensorFlow's)."""
    rows, columns = same_padding(height, 3, 2), same_padding(width, 3, 2)
    out_height, out_width = -(-height // 2), -(-width // 2)
    ones = np.pad(np.ones((height, width), np.float32), [rows, columns])
    return sum(
        ones[row : row + 2 * out_height - 1 : 2, column : column + 2 * out_width - 1 : 2]
        for row in range(3)
        for column in range(3)
    )


def average_pool_3x3(x):
    """The skip's 1x3x3 average pool, stride 1x2x2, SAME padding counting only real pixels
    (TensorFlow's avg_pool SAME): [B, T, H, W, C] -> [B, T, ceil(H/2), ceil(W/2), C].
    Nine strided slices, which every Keras backend counts so; traced for a TFLite model,
    ops LiteRT's delegate runs (actrec.backbones.tflite_forms): TensorFlow's avg_pool, and
    for int8 (which XNNPACK pools in float32 only) a depthwise sum times each window's
    reciprocal count."""
    frames, height, width, channels = x.shape[1:]
    if for_tflite():
        images = ops.reshape(x, (-1, height, width, channels))
        if for_int8():
            ones = np.ones((3, 3, channels, 1), np.float32)
            kernel = ops.cast(ones, x.dtype)
            sums = ops.depthwise_conv(images, kernel, 2, "same", data_format="channels_last")
            reciprocals = 1.0 / _window_counts(height, width)
            pooled = sums * ops.cast(reciprocals[None, :, :, None], x.dtype)
        else:
            pooled = ops.average_pool(images, 3, 2, padding="same", data_format="channels_last")
        return ops.reshape(pooled, (-1, frames, *pooled.shape[1:]))
    rows, columns = same_padding(height, 3, 2), same_padding(width, 3, 2)
    padded = ops.pad(x, [(0, 0), (0, 0), rows, columns, (0, 0)])
    counts = _window_counts(height, width)
    out_height, out_width = counts.shape
    total = None
    for row in range(3):
        for column in range(3):
            window = padded[
                :, :, row : row + 2 * out_height - 1 : 2, column : column + 2 * out_width - 1 : 2
            ]
            total = window if total is None else total + window
    return total / ops.cast(counts[None, None, :, :, None], x.dtype)


@keras.saving.register_keras_serializable(package="actrec")
class MovinetBlock(layers.Layer):
    """One inverted bottleneck (the Model Garden's MovinetBlock): [B, T, H, W, Cin] ->
    [B, T, H', W', out_filters] = skip(x) + rezero * projection(se(feature(expansion(x)))).
    The skip is x itself when the channels and size are kept, else an average pool (when
    strided) and a 1x1 convolution with BatchNorm (`skip_project`)."""

    def __init__(
        self,
        out_filters: int,
        expand_filters: int,
        kernel_size=(3, 3, 3),
        strides=(1, 1, 1),
        causal: bool = False,
        conv_type: str = "3d",
        se_type: str = "3d",
        activation: str = "swish",
        gating_activation: str = "sigmoid",
        positional_encoding: bool = False,
        epsilon: float = 1e-3,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.out_filters, self.expand_filters = int(out_filters), int(expand_filters)
        self.kernel_size = tuple(int(k) for k in kernel_size)
        self.strides = tuple(int(s) for s in strides)
        self.causal, self.conv_type, self.se_type = causal, conv_type, se_type
        self.activation, self.gating_activation = activation, gating_activation
        self.positional_encoding, self.epsilon = positional_encoding, epsilon
        self.downsample = any(stride > 1 for stride in self.strides)
        common = dict(conv_type=conv_type, epsilon=epsilon)
        self.expansion = MovinetConv(
            expand_filters, activation=activation, name="expansion", **common
        )
        self.feature = MovinetConv(
            expand_filters, self.kernel_size, self.strides, depthwise=True, causal=causal,
            activation=activation, name="feature", **common,
        )  # fmt: skip
        hidden = make_divisible(0.25 * expand_filters * (2 if se_type == "2plus3d" else 1))
        self.se = SqueezeExcitation(
            hidden, se_type, causal, activation, gating_activation, positional_encoding, name="se"
        )
        self.projection = MovinetConv(out_filters, name="projection", **common)

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        self.expansion.build(input_shape)
        expanded = self.expansion.compute_output_shape(input_shape)
        self.feature.build(expanded)
        featured = self.feature.compute_output_shape(expanded)
        self.se.build(featured)
        self.projection.build(featured)
        self.skip = None
        if int(input_shape[-1]) != self.out_filters or self.downsample:
            self.skip = MovinetConv(
                self.out_filters, conv_type=self.conv_type, epsilon=self.epsilon,
                name="skip_project",
            )  # fmt: skip
            self.skip.build(featured[:-1] + input_shape[-1:])
        self.rezero = self.add_weight((), "zeros", name="rezero")

    def call(self, inputs):
        return self.with_states(inputs)[0]

    def with_states(self, inputs, states=None, frames_before=None):
        states = states or {}
        x = self.expansion(inputs)
        x, buffer = self.feature.with_states(x, states.get("stream_buffer"))
        x, pool_sum = self.se.with_states(x, states.get("pool_buffer"), frames_before)
        x = self.projection(x) * self.rezero
        skip = inputs
        if self.skip is not None:
            skip = self.skip(average_pool_3x3(inputs) if self.downsample else inputs)
        new_states = {"pool_buffer": pool_sum}
        if buffer is not None:
            new_states["stream_buffer"] = buffer
        return x + skip, new_states

    def compute_output_shape(self, input_shape):
        return (*self.feature.compute_output_shape(input_shape)[:-1], self.out_filters)

    def get_config(self):
        return {
            **super().get_config(),
            "out_filters": self.out_filters,
            "expand_filters": self.expand_filters,
            "kernel_size": self.kernel_size,
            "strides": self.strides,
            "causal": self.causal,
            "conv_type": self.conv_type,
            "se_type": self.se_type,
            "activation": self.activation,
            "gating_activation": self.gating_activation,
            "positional_encoding": self.positional_encoding,
            "epsilon": self.epsilon,
        }


@keras.saving.register_keras_serializable(package="actrec")
class MovinetHead(layers.Layer):
    """The head: a 1x1 projection with BatchNorm and activation, then the mean over every
    frame so far and every pixel: [B, T, H, W, C] -> [B, project_filters] (the clip
    feature; in a causal stream, of every frame from the first)."""

    def __init__(
        self, project_filters: int, conv_type: str = "3d", activation: str = "swish",
        epsilon: float = 1e-3, **kwargs,
    ):  # fmt: skip
        super().__init__(**kwargs)
        self.project_filters, self.conv_type = int(project_filters), conv_type
        self.activation, self.epsilon = activation, epsilon
        self.project = MovinetConv(
            project_filters, conv_type=conv_type, activation=activation, epsilon=epsilon,
            name="project",
        )  # fmt: skip

    def build(self, input_shape):
        self.project.build(tuple(input_shape))

    def call(self, inputs):
        return self.with_states(inputs)[0]

    def with_states(self, inputs, states=None, frames_before=None):
        x = self.project(inputs)
        space = ops.mean(x, axis=(2, 3), keepdims=True)
        pool_sum = (states or {}).get("pool_buffer")
        pooled, new_sum = pooled_frames(space, pool_sum, _frames_before(x, frames_before), False)
        return ops.reshape(pooled, (-1, self.project_filters)), {"pool_buffer": new_sum}

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.project_filters)

    def get_config(self):
        return {
            **super().get_config(),
            "project_filters": self.project_filters,
            "conv_type": self.conv_type,
            "activation": self.activation,
            "epsilon": self.epsilon,
        }
