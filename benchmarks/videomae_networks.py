"""The networks benchmarks/videomae_training_step.py and videomae_onnx.py compare: actrec's
Keras VideoMAE and transformers' VideoMAEForVideoClassification of one size, on the same
clips.

    --size tiny   width 32, 2 blocks, 4 heads, 4 frames of 32 px (checks that a script runs)
    --size s      ViT-S/16: width 384, 12 blocks, 6 heads, 16 frames of 224 px
    --size b      ViT-B/16: width 768, 12 blocks, 12 heads, 16 frames of 224 px

Needs the test extra's torch and transformers (pyproject.toml's `test` extra pins them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from actrec.backbones.videomae.spec import VIDEOMAE_SPECS, VideoMAESpec

CLASSES = 400


@dataclass(frozen=True)
class NetworkSize:
    spec: VideoMAESpec
    frames: int
    image: int


SIZES = {
    "tiny": NetworkSize(VideoMAESpec("videomae_tiny", 32, 2, 4, 64), 4, 32),
    "s": NetworkSize(VIDEOMAE_SPECS["videomae_s"], 16, 224),
    "b": NetworkSize(VIDEOMAE_SPECS["videomae_b"], 16, 224),
}


def clips_and_labels(size: NetworkSize, batch: int, seed: int = 0):
    """(clips float32 [B, T, H, W, 3] channels last, labels int64 [B])."""
    rng = np.random.default_rng(seed)
    clips = rng.normal(size=(batch, size.frames, size.image, size.image, 3)).astype("float32")
    return clips, rng.integers(0, CLASSES, size=batch)


def channels_first(clips: np.ndarray) -> np.ndarray:
    """[B, T, H, W, C] -> [B, T, C, H, W], the layout transformers' VideoMAE takes."""
    return np.ascontiguousarray(clips.transpose(0, 1, 4, 2, 3))


def transformers_classifier(size: NetworkSize, seed: int = 0):
    """transformers' VideoMAEForVideoClassification of `size`, random weights from `seed`
    (the authors' epsilon 1e-6, mean pooling, query / value biases drawn too: transformers
    starts them at zero, which actrec's conversion refuses as a damaged file)."""
    import torch
    import transformers

    torch.manual_seed(seed)
    spec = size.spec
    config = transformers.VideoMAEConfig(
        image_size=size.image,
        patch_size=spec.patch_size,
        num_frames=size.frames,
        tubelet_size=spec.tubelet_size,
        hidden_size=spec.width,
        num_hidden_layers=spec.depth,
        num_attention_heads=spec.heads,
        intermediate_size=spec.mlp_width,
        layer_norm_eps=spec.layer_norm_epsilon,
        qkv_bias=spec.query_value_bias,
        use_mean_pooling=True,
        num_labels=CLASSES,
    )
    model = transformers.VideoMAEForVideoClassification(config)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith(("q_bias", "v_bias", "query.bias", "value.bias")):
                parameter.normal_(0.0, 0.02)
    return model


def median_seconds(function, repeats: int, warmup: int = 2) -> float:
    """The median wall time of `function()` over `repeats` calls after `warmup` calls."""
    import time

    for _ in range(warmup):
        function()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return sorted(times)[len(times) // 2]
