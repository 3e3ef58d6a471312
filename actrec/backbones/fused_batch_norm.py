"""BatchNormalization whose training step runs TensorFlow's fused kernel.

Keras 3's BatchNormalization computes a batch's moments and normalises it with a dozen
separate ops (mean, squared difference, subtract, multiply, ... and their gradients); Keras
2 (tf.keras) ran TensorFlow's fused kernel, FusedBatchNormV3, which does the same in one op
forward and one backward. Keras 3 offers no switch back, hence this subclass. On a CPU
with AVX-512 (oneDNN) the synthetic TSM's training step (MobileNetV2) is 1.33x faster with a
quarter less CPU, 1.1x with AVX2 or Eigen kernels, and tracing it 1.2-1.3x faster
(`python benchmarks/batch_norm.py`).

The layer is Keras' own in every case but one: training with TensorFlow, a channels-last
input of rank 4 ([N, H, W, C]), no mask, neither renormalisation nor synchronised
statistics, and an epsilon of at least 1e-5 (cuDNN's minimum). There it computes what
Keras computes (the same output, gradients and moving-statistics update; the kernel's
variance is the unbiased one, rescaled to the biased one Keras uses). In inference it is
always Keras' layer, so exports (SavedModel, TFLite, ONNX) are unchanged, and its weights
and their names are BatchNormalization's.
"""

from __future__ import annotations

import keras
from keras import ops

# The smallest epsilon cuDNN accepts (CUDNN_BN_MIN_EPSILON): below it, Keras' ops run.
_SMALLEST_FUSED_EPSILON = 1e-5


@keras.saving.register_keras_serializable(package="actrec")
class FusedBatchNormalization(keras.layers.BatchNormalization):
    """keras.layers.BatchNormalization, trained with TensorFlow's FusedBatchNormV3."""

    def call(self, inputs, training=None, mask=None):
        if not self._runs_fused(inputs, training, mask):
            return super().call(inputs, training=training, mask=mask)
        import tensorflow as tf

        x = ops.cast(inputs, "float32")  # as Keras does: its statistics are float32
        outputs, mean, unbiased_variance, *_ = tf.raw_ops.FusedBatchNormV3(
            x=x,
            scale=ops.cast(self.gamma, "float32"),
            offset=ops.cast(self.beta, "float32"),
            mean=tf.constant([], tf.float32),
            variance=tf.constant([], tf.float32),
            epsilon=self.epsilon,
            exponential_avg_factor=1.0,
            data_format="NHWC",
            is_training=True,
        )
        count = ops.cast(ops.size(x) // ops.shape(x)[-1], "float32")  # values per channel
        variance = unbiased_variance * (count - 1.0) / ops.maximum(count, 1.0)
        self.moving_mean.assign(self.moving_mean * self.momentum + mean * (1.0 - self.momentum))
        self.moving_variance.assign(
            self.moving_variance * self.momentum + variance * (1.0 - self.momentum)
        )
        return ops.cast(outputs, self.compute_dtype)

    def _runs_fused(self, inputs, training, mask) -> bool:
        """Whether this call computes with the fused kernel (see the module docstring)."""
        return bool(
            training
            and self.trainable
            and mask is None
            and keras.backend.backend() == "tensorflow"
            and len(inputs.shape) == 4
            and self.axis in (-1, 3)
            and self.scale
            and self.center
            and not self.renorm
            and not getattr(self, "synchronized", False)
            and self.epsilon >= _SMALLEST_FUSED_EPSILON
        )


def fused_copy(layer: keras.layers.Layer) -> keras.layers.Layer:
    """A new, unbuilt layer of `layer`'s config: a FusedBatchNormalization for a
    BatchNormalization, else of its class (what keras.models.clone_model makes by default)."""
    if type(layer) is keras.layers.BatchNormalization:
        return FusedBatchNormalization.from_config(layer.get_config())
    return layer.__class__.from_config(layer.get_config())


def with_fused_batch_normalization(model: keras.Model) -> keras.Model:
    """Returns functional `model` with each BatchNormalization layer replaced by a
    FusedBatchNormalization of the same config and name (new, unbuilt: meant for a network
    whose weights are not loaded yet); every other layer is the original object. The copy
    keeps the model's name, and its weight list is the original's."""

    def fused(layer):
        if type(layer) is keras.layers.BatchNormalization:
            return FusedBatchNormalization.from_config(layer.get_config())
        return layer

    copy = keras.models.clone_model(model, clone_function=fused)
    copy.name = model.name
    return copy
