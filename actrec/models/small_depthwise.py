"""DepthwiseConv2D whose filter gradient on an input smaller than its kernel is cheap.

TensorFlow's CPU kernel for a depthwise convolution's filter gradient
(DepthwiseConv2dNativeBackpropFilter, oneDNN) is pathologically slow when the input's
height or width is smaller than the kernel: MobileNetV2's last blocks (960 channels, 3x3
kernels) on a 2x2 input (a 48 or 64 px frame) take 3-8 ms a layer, against 0.6 ms on a
larger 3x3 input. The synthetic TSM and flow recipes, the quickstart's, train exactly there.

In that case only, a training call computes the filter gradient from its definition, one
sum per kernel tap: grad[i, j, c] = sum over (b, h, w) of padded_x[b, h + i, w + j, c] *
dy[b, h, w, c]; nine multiply-and-sums of tensors of the input's size. The output and the
input gradient are TensorFlow's own ops. Measured (`python benchmarks/small_depthwise.py`):
the filter gradient 5.5x faster on [64, 2, 2, 960]; a MobileNetV2 training step 1.1x
faster at 32 px, 1.05x at 48 px.

Every other call (inference, other strides, dilations, larger inputs, other backends) is
Keras' layer, so exports are unchanged; its weights and their names are DepthwiseConv2D's.
"""

from __future__ import annotations

import keras


@keras.saving.register_keras_serializable(package="actrec")
class SmallInputDepthwiseConv2D(keras.layers.DepthwiseConv2D):
    """keras.layers.DepthwiseConv2D, with its own filter gradient when the input is smaller
    than the kernel (see the module docstring)."""

    def call(self, inputs, training=None):
        if not self._computes_own_filter_gradient(inputs, training):
            return super().call(inputs)
        outputs = _depthwise_convolution(inputs, self.kernel)
        if self.use_bias:
            outputs = outputs + self.bias
        return outputs if self.activation is None else self.activation(outputs)

    def _computes_own_filter_gradient(self, inputs, training) -> bool:
        height, width = inputs.shape[1], inputs.shape[2]
        kernel_height, kernel_width = self.kernel_size
        return bool(
            training
            and self.trainable
            and keras.backend.backend() == "tensorflow"
            and self.data_format == "channels_last"
            and len(inputs.shape) == 4
            and tuple(self.strides) == (1, 1)
            and tuple(self.dilation_rate) == (1, 1)
            and self.padding == "same"
            and self.depth_multiplier == 1
            and height is not None
            and width is not None
            and (height < kernel_height or width < kernel_width)
        )


def _depthwise_convolution(inputs, kernel):
    """tf.nn.depthwise_conv2d(inputs, kernel) with stride 1 and SAME padding, whose kernel
    gradient is `filter_gradient_by_taps`. inputs [N, H, W, C]; kernel [kh, kw, C, 1]."""
    import tensorflow as tf

    @tf.custom_gradient
    def convolution(x, filters):
        def gradients(dy):
            dx = tf.raw_ops.DepthwiseConv2dNativeBackpropInput(
                input_sizes=tf.shape(x),
                filter=filters,
                out_backprop=dy,
                strides=[1, 1, 1, 1],
                padding="SAME",
            )
            return dx, filter_gradient_by_taps(x, dy, filters.shape[0], filters.shape[1])

        return tf.nn.depthwise_conv2d(x, filters, [1, 1, 1, 1], "SAME"), gradients

    # a tensor, not the variable (custom_gradient would then want the variables' gradients
    # apart); reading it inside the layer's call applies Keras' mixed-precision autocast
    return convolution(inputs, tf.convert_to_tensor(kernel))


def filter_gradient_by_taps(x, dy, kernel_height: int, kernel_width: int):
    """The gradient of a stride-1 SAME depthwise convolution's kernel, [kh, kw, C, 1], from
    its input x [N, H, W, C] and output gradient dy [N, H, W, C], summed in float32 and
    returned in x's dtype."""
    import tensorflow as tf

    height, width = x.shape[1], x.shape[2]
    top, left = (kernel_height - 1) // 2, (kernel_width - 1) // 2  # TensorFlow's SAME
    padded = tf.pad(
        tf.cast(x, tf.float32),
        [[0, 0], [top, kernel_height - 1 - top], [left, kernel_width - 1 - left], [0, 0]],
    )
    dy = tf.cast(dy, tf.float32)
    taps = [
        tf.reduce_sum(padded[:, i : i + height, j : j + width, :] * dy, axis=[0, 1, 2])
        for i in range(kernel_height)
        for j in range(kernel_width)
    ]  # kh * kw of [C]
    gradient = tf.reshape(tf.stack(taps), [kernel_height, kernel_width, -1, 1])
    return tf.cast(gradient, x.dtype)
