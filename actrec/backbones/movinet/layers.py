"""MoViNet's convolutions in Keras 3, written with keras.ops only so that they run on the
TensorFlow, JAX and PyTorch backends alike.

Shapes: [B, T, H, W, C] (clips, frames, rows, columns, channels). Padding is explicit:
spatially TensorFlow's SAME (the Model Garden's causal convolutions pad the spatial axes
so too), temporally SAME for a base model and causal for a causal one (k - 1 zeros
before the first frame). A causal convolution of temporal kernel k > 1 keeps a stream
buffer: the k - 1 frames before the clip, [B, k - 1, H, W, C] (zeros start a video), so
a clip cut into pieces and run piece by piece with its buffers gives the whole clip's
frames.
"""

from __future__ import annotations

import keras
from keras import layers, ops

from actrec.backbones.tflite_forms import for_int8

HARD_SIGMOID_SCALE = 0.16667
"""The Model Garden's hard sigmoid is relu6(x + 3) * 0.16667 (official/modeling/activations/
sigmoid.py), not 1 / 6: kept, so that gates agree to float precision."""


def hard_swish(x):
    """x * relu6(x + 3) / 6: [...] -> [...]; while an int8 TFLite model is traced, as
    relu6(x + 3) * x / 6, the same function up to float rounding in ops XNNPACK runs in
    int8 (actrec.backbones.tflite_forms)."""
    if for_int8():
        return ops.relu6(x + 3.0) * x * (1.0 / 6.0)
    return x * ops.relu6(x + 3.0) * (1.0 / 6.0)


def activation_of(name: str | None):
    """The activation function called `name` (the Model Garden's tf_utils names)."""
    if name is None:
        return lambda x: x
    return {
        "swish": ops.silu,
        "hard_swish": hard_swish,
        "sigmoid": ops.sigmoid,
        "hard_sigmoid": lambda x: ops.relu6(x + 3.0) * HARD_SIGMOID_SCALE,
        "relu": ops.relu,
    }[name]


def same_padding(size: int, kernel: int, stride: int) -> tuple[int, int]:
    """TensorFlow's SAME padding of one axis of `size`: (before, after)."""
    overlap = (size - 1) % stride + 1
    total = max(kernel - overlap, 0)
    return total // 2, total - total // 2


def same_output_size(size: int, stride: int) -> int:
    return -(-size // stride)


@keras.saving.register_keras_serializable(package="actrec")
class MovinetActivation(layers.Layer):
    """An activation of activation_of's by name: [...] -> [...]."""

    def __init__(self, activation: str, **kwargs):
        super().__init__(**kwargs)
        self.activation = activation

    def call(self, inputs):
        return activation_of(self.activation)(inputs)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "activation": self.activation}


@keras.saving.register_keras_serializable(package="actrec")
class MovinetConv(layers.Layer):
    """A convolution, its BatchNorm and activation (the Model Garden's ConvBlock /
    StreamConvBlock): [B, T, H, W, Cin] -> [B, T, H', W', filters].

    conv_type "3d": one Conv3D (depthwise: groups = Cin), kernel [kt, kh, kw, in, out];
    "2plus1d": a 2D convolution of each frame (`conv2d`, BatchNorm `bn`), then, when kt > 1,
    a temporal one [kt, 1] over each pixel (`conv2d_temporal`, BatchNorm `bn_temporal`),
    each followed by the activation. A causal one with kt > 1 buffers, in "3d" its input
    frames and in "2plus1d" the spatial convolution's output frames (`buffer_shape`).
    """

    def __init__(
        self,
        filters: int,
        kernel_size=(1, 1, 1),
        strides=(1, 1, 1),
        depthwise: bool = False,
        causal: bool = False,
        conv_type: str = "3d",
        use_bias: bool = False,
        batch_norm: bool = True,
        activation: str | None = None,
        epsilon: float = 1e-3,
        momentum: float = 0.99,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.filters, self.depthwise, self.causal = int(filters), depthwise, causal
        self.kernel_size = tuple(int(k) for k in kernel_size)
        self.strides = tuple(int(s) for s in strides)
        self.conv_type, self.use_bias, self.batch_norm = conv_type, use_bias, batch_norm
        self.activation, self.epsilon, self.momentum = activation, epsilon, momentum

    @property
    def buffered(self) -> bool:
        """Whether the convolution keeps a stream buffer (causal, temporal kernel > 1)."""
        return self.causal and self.kernel_size[0] > 1

    def _norm(self, name: str):
        return layers.BatchNormalization(epsilon=self.epsilon, momentum=self.momentum, name=name)

    def build(self, input_shape):
        _, _, height, width, channels = input_shape
        self.input_spatial = (int(height), int(width))
        kt, kh, kw = self.kernel_size
        st, sh, sw = self.strides
        out_height, out_width = same_output_size(height, sh), same_output_size(width, sw)
        out_channels = channels if self.depthwise else self.filters
        self.norm = self._norm("bn") if self.batch_norm else None
        self.norm_temporal = None
        self.conv_temporal = None
        if self.conv_type == "3d":
            self.conv = layers.Conv3D(
                out_channels, self.kernel_size, self.strides, padding="valid",
                groups=channels if self.depthwise else 1, use_bias=self.use_bias, name="conv3d",
            )  # fmt: skip
            self.conv.build((None, None, None, None, channels))
            self.buffer_shape = (kt - 1, int(height), int(width), int(channels))
        else:
            self.conv = self._conv2d(out_channels, (kh, kw), (sh, sw), "conv2d")
            self.conv.build((None, None, None, channels))
            if kt > 1:
                self.conv_temporal = self._conv2d(out_channels, (kt, 1), (st, 1), "conv2d_temporal")
                self.conv_temporal.build((None, None, None, out_channels))
                if self.batch_norm:
                    self.norm_temporal = self._norm("bn_temporal")
                    self.norm_temporal.build((None, None, None, out_channels))
            self.buffer_shape = (kt - 1, out_height, out_width, int(out_channels))
        if self.norm is not None:
            rank = 5 if self.conv_type == "3d" else 4
            self.norm.build((*[None] * (rank - 1), out_channels))

    def _conv2d(self, channels, kernel, strides, name):
        if self.depthwise:
            return layers.DepthwiseConv2D(
                kernel, strides, padding="valid", use_bias=self.use_bias, name=name
            )
        return layers.Conv2D(
            channels, kernel, strides, padding="valid", use_bias=self.use_bias, name=name
        )

    def call(self, inputs):
        return self.with_states(inputs)[0]

    def with_states(self, inputs, buffer=None):
        """(outputs, the new stream buffer or None): `buffer` [B, kt - 1, h, w, c] holds
        the frames before `inputs` (None: zeros, the start of a video)."""
        act = activation_of(self.activation)
        if self.conv_type == "3d":
            x, new_buffer = self._temporal_padding(inputs, buffer)
            x = self._spatial_padding(x, self.kernel_size[1:], self.strides[1:])
            x = self._depthwise_3d(x) if self.depthwise else self.conv(x)
            return self._finish(x, self.norm, act), new_buffer
        frames = inputs.shape[1]
        height, width, channels = inputs.shape[2:]
        x = ops.reshape(inputs, (-1, height, width, channels))  # [B * T, H, W, C]
        x = self.conv(self._spatial_padding(x, self.kernel_size[1:], self.strides[1:], axis=1))
        x = self._finish(x, self.norm, act)
        x = ops.reshape(x, (-1, frames, *x.shape[1:]))  # [B, T, H', W', C']
        if self.conv_temporal is None:
            return x, None
        x, new_buffer = self._temporal_padding(x, buffer)
        padded, height, width, channels = x.shape[1:]
        x = ops.reshape(x, (-1, padded, height * width, channels))  # [B, T + pad, H'W', C']
        x = self._finish(self.conv_temporal(x), self.norm_temporal, act)
        return ops.reshape(x, (-1, x.shape[1], height, width, channels)), new_buffer

    def _depthwise_3d(self, x):
        """The depthwise Conv3D (`conv3d`'s kernel [kt, kh, kw, 1, C] and bias) of padded
        frames x [B, T + pad, H + pad, W + pad, C], as the sum over its kt temporal taps of
        a depthwise 2D convolution of the frames each tap reads: the same values, but
        Keras runs a grouped Conv3D on TensorFlow in an XLA-compiled function of its own,
        which took a MoViNet-A0 base clip 28x the stream's time on a CPU and which neither
        TFLite (no grouped CONV_3D kernel) nor tf2onnx converts (docs/benchmarks.md)."""
        kt, stride = self.kernel_size[0], self.strides[0]
        height, width, channels = x.shape[2:]
        total = None
        for tap in range(kt):
            # the frames tap `tap` reads: from `tap` to kt - 1 - tap before the end
            read = x[:, tap : (tap - (kt - 1)) or None : stride]  # [B, T', H, W, C]
            kernel = ops.transpose(self.conv.kernel[tap], (0, 1, 3, 2))  # [kh, kw, C, 1]
            y = ops.depthwise_conv(
                ops.reshape(read, (-1, height, width, channels)),
                kernel,
                strides=self.strides[1:],
                padding="valid",
            )
            total = y if total is None else total + y
        if self.use_bias:
            total = total + self.conv.bias
        frames = read.shape[1] if read.shape[1] is not None else ops.shape(read)[1]
        return ops.reshape(total, (-1, frames, *total.shape[1:]))

    @staticmethod
    def _finish(x, norm, act):
        if norm is not None:
            x = norm(x)
        return act(x)

    def _temporal_padding(self, x, buffer):
        """x [B, T, ...] with the frames before it: causal (the buffer, or zeros) or SAME."""
        kt, stride = self.kernel_size[0], self.strides[0]
        if kt == 1:
            return x, None
        if not self.causal:
            before, after = same_padding(x.shape[1], kt, stride)
            return ops.pad(x, [(0, 0), (before, after), (0, 0), (0, 0), (0, 0)]), None
        if buffer is None:
            x = ops.pad(x, [(0, 0), (kt - 1, 0), (0, 0), (0, 0), (0, 0)])
        else:
            x = ops.concatenate([ops.cast(buffer, x.dtype), x], axis=1)
        return x, x[:, -(kt - 1) :]

    @staticmethod
    def _spatial_padding(x, kernel, strides, axis: int = 2):
        """SAME padding of the two spatial axes starting at `axis`."""
        pads = [(0, 0)] * len(x.shape)
        for offset in range(2):
            pads[axis + offset] = same_padding(
                x.shape[axis + offset], kernel[offset], strides[offset]
            )
        if not any(any(pad) for pad in pads):
            return x
        return ops.pad(x, pads)

    def compute_output_shape(self, input_shape):
        batch, frames, height, width, channels = input_shape
        out_channels = channels if self.depthwise else self.filters
        return (
            batch, frames, same_output_size(height, self.strides[1]),
            same_output_size(width, self.strides[2]), out_channels,
        )  # fmt: skip

    def get_config(self):
        return {
            **super().get_config(),
            "filters": self.filters,
            "kernel_size": self.kernel_size,
            "strides": self.strides,
            "depthwise": self.depthwise,
            "causal": self.causal,
            "conv_type": self.conv_type,
            "use_bias": self.use_bias,
            "batch_norm": self.batch_norm,
            "activation": self.activation,
            "epsilon": self.epsilon,
            "momentum": self.momentum,
        }
