"""VideoMAE's layers in Keras 3, written with keras.ops only so that they run on the
TensorFlow, JAX and PyTorch backends alike.

Shapes: B clips, N tokens (T' x H' x W' tubelets, time slowest), D the token width.
"""

from __future__ import annotations

import keras
import numpy as np
from keras import layers, ops


def sinusoid_table(num_tokens: int, width: int) -> np.ndarray:
    """VideoMAE's fixed position table [N, D] float32: token n's column 2i is
    sin(n / 10000^(2i / D)) and column 2i + 1 the cosine of the same angle (Vaswani et al.),
    over the flattened token index, so a clip of another frame count or size has the table
    the source code builds for that size."""
    positions = np.arange(num_tokens, dtype=np.float64)[:, None]
    exponents = 2 * (np.arange(width) // 2) / width
    angles = positions / np.power(10000.0, exponents)[None, :]
    table = np.where(np.arange(width) % 2 == 0, np.sin(angles), np.cos(angles))
    return table.astype(np.float32)


SQRT_HALF = 0.7071067811865476


def exact_gelu(x):
    """GELU with the error function, x * (1 + erf(x / sqrt 2)) / 2: keras.ops.gelu's exact
    form, written with erf because TensorFlow's own computes erfc, which neither tf2onnx
    nor the int8 converters take (the same values to float32 rounding)."""
    return 0.5 * x * (1.0 + ops.erf(x * SQRT_HALF))


@keras.saving.register_keras_serializable(package="actrec")
class SinusoidPositions(layers.Layer):
    """tokens [B, N, D] + the fixed sinusoid table of N tokens (no weights: the table is
    recomputed from the input's static shape)."""

    def call(self, tokens):
        table = sinusoid_table(tokens.shape[1], tokens.shape[2])
        return tokens + ops.cast(table[None], tokens.dtype)


@keras.saving.register_keras_serializable(package="actrec")
class DropPath(layers.Layer):
    """Stochastic depth on a residual branch: in training each clip's branch is dropped with
    probability `rate` and a kept one scaled by 1 / (1 - rate). Keras 3 has no such layer
    (keras-hub keeps its own), hence this one. `branch_scales` draws the scales apart from
    their use, so that a rematerialised block replays the same draw in its recomputation."""

    def __init__(self, rate: float = 0.0, seed: int | None = None, **kwargs):
        super().__init__(**kwargs)
        self.rate, self.seed = float(rate), seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def branch_scales(self, branch, training=None):
        """[B, 1, ..., 1]: 0 for a dropped clip, 1 / (1 - rate) for a kept one; ones outside
        training or at rate 0."""
        shape = (ops.shape(branch)[0],) + (1,) * (len(branch.shape) - 1)
        if not training or self.rate == 0.0:
            return ops.ones(shape, branch.dtype)
        keep = 1.0 - self.rate
        kept = ops.floor(keep + keras.random.uniform(shape, seed=self.seed_generator))
        return ops.cast(kept / keep, branch.dtype)

    def call(self, branch, training=None):
        return branch * self.branch_scales(branch, training)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


@keras.saving.register_keras_serializable(package="actrec")
class VideoMAEAttention(layers.Layer):
    """Multi-head self-attention [B, N, D] -> [B, N, D] with query and value biases and no
    key bias (VideoMAE's `qkv_bias`: the key's bias would cancel in the softmax). The
    product goes through keras.ops.dot_product_attention: each backend's fused kernel (flash
    attention where the backend and device have it), logits and softmax in float32."""

    def __init__(self, width: int, heads: int, query_value_bias: bool = True, **kwargs):
        super().__init__(**kwargs)
        self.width, self.heads, self.query_value_bias = width, heads, query_value_bias
        self.query = layers.Dense(width, use_bias=query_value_bias, name="query")
        self.key = layers.Dense(width, use_bias=False, name="key")
        self.value = layers.Dense(width, use_bias=query_value_bias, name="value")
        self.projection = layers.Dense(width, name="projection")

    def build(self, input_shape):
        for dense in (self.query, self.key, self.value):
            dense.build(input_shape)
        self.projection.build(input_shape)

    def call(self, tokens):
        head_shape = (-1, tokens.shape[1], self.heads, self.width // self.heads)
        query, key, value = (
            ops.reshape(dense(tokens), head_shape) for dense in (self.query, self.key, self.value)
        )
        attended = ops.dot_product_attention(query, key, value)  # [B, N, heads, D / heads]
        return self.projection(ops.reshape(attended, (-1, tokens.shape[1], self.width)))

    def get_config(self):
        return {
            **super().get_config(),
            "width": self.width,
            "heads": self.heads,
            "query_value_bias": self.query_value_bias,
        }


@keras.saving.register_keras_serializable(package="actrec")
class VideoMAEBlock(layers.Layer):
    """One pre-norm transformer block [B, N, D] -> [B, N, D]:
    x + attention(norm(x)), then x + MLP(norm(x)) with an exact (erf) GELU, each branch
    through stochastic depth and, where the source has them (init_values > 0), scaled by a
    learned per-channel layer scale. The LayerNorms compute in float32 under a mixed policy;
    with `remat` the block is recomputed in the backward pass instead of kept."""

    def __init__(
        self,
        width: int,
        heads: int,
        mlp_width: int,
        epsilon: float = 1e-6,
        query_value_bias: bool = True,
        drop_path_rate: float = 0.0,
        layer_scale: float = 0.0,
        remat: bool = False,
        seed: int | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.width, self.heads, self.mlp_width = width, heads, mlp_width
        self.epsilon, self.query_value_bias = epsilon, query_value_bias
        self.drop_path_rate, self.layer_scale = drop_path_rate, layer_scale
        self.remat, self.seed = remat, seed
        self.norm_before = layers.LayerNormalization(
            epsilon=epsilon, dtype="float32", name="norm_before"
        )
        self.attention = VideoMAEAttention(width, heads, query_value_bias, name="attention")
        self.norm_after = layers.LayerNormalization(
            epsilon=epsilon, dtype="float32", name="norm_after"
        )
        self.mlp_in = layers.Dense(mlp_width, name="mlp_in")
        self.mlp_out = layers.Dense(width, name="mlp_out")
        self.drop_path = DropPath(drop_path_rate, seed=seed, name="drop_path")

    def build(self, input_shape):
        self.norm_before.build(input_shape)
        self.attention.build(input_shape)
        self.norm_after.build(input_shape)
        self.mlp_in.build(input_shape)
        self.mlp_out.build((*input_shape[:-1], self.mlp_width))
        self.attention_scale = self.mlp_scale = None
        if self.layer_scale > 0:
            start = keras.initializers.Constant(self.layer_scale)
            self.attention_scale = self.add_weight((self.width,), start, name="attention_scale")
            self.mlp_scale = self.add_weight((self.width,), start, name="mlp_scale")

    def call(self, tokens, training=None):
        attention_scales = self.drop_path.branch_scales(tokens, training)
        mlp_scales = self.drop_path.branch_scales(tokens, training)
        # Gradient checkpointing (the recipe's remat): the block's inside (the attention
        # matrix, the 4 D MLP) is recomputed in the backward pass, only its input kept; the
        # drop-path draw happens outside, so the recomputation uses the same one.
        residuals = keras.remat(self._residuals) if self.remat and training else self._residuals
        return residuals(tokens, attention_scales, mlp_scales)

    def _residuals(self, tokens, attention_scales, mlp_scales):
        attended = self.attention(ops.cast(self.norm_before(tokens), self.compute_dtype))
        if self.attention_scale is not None:
            attended = attended * ops.cast(self.attention_scale, attended.dtype)
        tokens = tokens + attended * attention_scales
        normalised = ops.cast(self.norm_after(tokens), self.compute_dtype)
        mixed = self.mlp_out(exact_gelu(self.mlp_in(normalised)))
        if self.mlp_scale is not None:
            mixed = mixed * ops.cast(self.mlp_scale, mixed.dtype)
        return tokens + mixed * mlp_scales

    def get_config(self):
        return {
            **super().get_config(),
            "width": self.width,
            "heads": self.heads,
            "mlp_width": self.mlp_width,
            "epsilon": self.epsilon,
            "query_value_bias": self.query_value_bias,
            "drop_path_rate": self.drop_path_rate,
            "layer_scale": self.layer_scale,
            "remat": self.remat,
            "seed": self.seed,
        }
