"""The VideoMAE classifier and its pooled-feature model, as Keras functional models.

clip [B, T, H, W, 3] (normalised floats)
  -> patch_embedding   Conv3D, kernel = stride = tubelet x patch x patch  [B, T', H', W', D]
  -> tokens [B, N, D] (time slowest) + the sinusoid table of N tokens
  -> block_0 ... block_{depth-1}
  -> token_mean, fc_norm  [B, D]   (or norm and the first token, without mean pooling)
  -> classifier  [B, K] logits
"""

from __future__ import annotations

import keras
import numpy as np
from keras import layers

from actrec.backbones.videomae.layers import SinusoidPositions, VideoMAEBlock
from actrec.backbones.videomae.spec import VideoMAESpec

FEATURES_LAYER = "fc_norm"
"""The layer whose output is the clip feature [B, D] (the frozen-feature probe's input)."""


def drop_path_rates(depth: int, rate: float) -> list[float]:
    """Stochastic depth per block: 0 for the first, rising linearly to `rate` for the last
    (the authors' torch.linspace(0, drop_path_rate, depth))."""
    return [float(value) for value in np.linspace(0.0, rate, depth)] if depth else []


def videomae_classifier(
    spec: VideoMAESpec,
    num_classes: int,
    num_frames: int = 16,
    image_size: tuple[int, int] = (224, 224),
    drop_path_rate: float = 0.0,
    dropout: float = 0.0,
    remat: bool = False,
    seed: int | None = None,
    name: str | None = None,
    preprocessing: keras.layers.Layer | None = None,
    input_name: str = "clip",
) -> keras.Model:
    """A VideoMAE clip classifier: [B, num_frames, H, W, 3] -> logits [B, num_classes].
    Any frame count and size the tubelets divide (8, 16, 32 frames; 160-288 px): the
    position table is recomputed for the clip's token count. remat: each block recomputed
    in the backward pass (gradient checkpointing); seed: block i's stochastic depth draws
    from seed + i (None: unseeded); preprocessing: a layer applied to the input first (a
    recipe's frames in [0, 255] -> normalised; None: the input is normalised already)."""
    grid = spec.token_grid(num_frames, *image_size)
    clip = keras.Input((num_frames, *image_size, 3), name=input_name)
    x = clip if preprocessing is None else preprocessing(clip)
    cube = (spec.tubelet_size, spec.patch_size, spec.patch_size)
    x = layers.Conv3D(spec.width, cube, strides=cube, name="patch_embedding")(x)
    x = layers.Reshape((int(np.prod(grid)), spec.width), name="tokens")(x)
    x = SinusoidPositions(name="positions")(x)
    for index, rate in enumerate(drop_path_rates(spec.depth, drop_path_rate)):
        x = VideoMAEBlock(
            spec.width,
            spec.heads,
            spec.mlp_width,
            epsilon=spec.layer_norm_epsilon,
            query_value_bias=spec.query_value_bias,
            drop_path_rate=rate,
            layer_scale=spec.layer_scale,
            remat=remat,
            seed=None if seed is None else seed + index,
            name=f"block_{index}",
        )(x)
    if spec.mean_pooling:
        x = layers.GlobalAveragePooling1D(name="token_mean")(x)
        x = layers.LayerNormalization(
            epsilon=spec.head_norm_epsilon, dtype="float32", name=FEATURES_LAYER
        )(x)
    else:
        x = layers.LayerNormalization(
            epsilon=spec.layer_norm_epsilon, dtype="float32", name="norm"
        )(x)
        x = layers.Cropping1D((0, x.shape[1] - 1), name="first_token")(x)
        x = layers.Flatten(name=FEATURES_LAYER)(x)
    if dropout:
        x = layers.Dropout(dropout, name="head_dropout")(x)
    logits = layers.Dense(num_classes, dtype="float32", name="classifier")(x)
    return keras.Model(clip, logits, name=name or spec.name)


def recipe_network(
    spec: VideoMAESpec,
    num_classes: int,
    *,
    num_frames: int,
    input_size: int,
    dropout: float = 0.0,
    drop_path_rate: float = 0.0,
    remat: bool = False,
    preprocessing: keras.layers.Layer | None = None,
    seed: int | None = None,
    name: str | None = None,
) -> keras.Model:
    """A recipe's VideoMAE (the registry's clip_builder, actrec.backbones.spec.ClipNetworkSpec):
    frames [B, num_frames, input_size, input_size, 3] (the input "frames") -> logits
    [B, num_classes]; the frames are a recipe's data.num_segments frames (consecutive or
    strided as data.sampling takes them) and every 2 of them one tubelet."""
    return videomae_classifier(
        spec,
        num_classes,
        num_frames=num_frames,
        image_size=(input_size, input_size),
        drop_path_rate=drop_path_rate,
        dropout=dropout,
        remat=remat,
        seed=seed,
        name=name,
        preprocessing=preprocessing,
        input_name="frames",
    )


def feature_model(classifier: keras.Model) -> keras.Model:
    """The classifier's clip features: [B, T, H, W, 3] -> [B, D] (fc_norm's output)."""
    return keras.Model(classifier.inputs, classifier.get_layer(FEATURES_LAYER).output)
