"""Mixup and CutMix of a training batch, with their soft targets.

Each step, with probability train.mix_prob, the batch [B, ..., H, W, C] (channels last) is
mixed with itself in reverse order (clip b with clip B - 1 - b), by one of:

    mixup   (Zhang et al. 2018)  x = lam x_b + (1 - lam) x_{B-1-b}, lam ~ Beta(a, a),
                                 a = train.mixup
    cutmix  (Yun et al. 2019)    a box of rows y0:y1, columns x0:x1 (every frame alike) taken
                                 from x_{B-1-b}; lam ~ Beta(a, a), a = train.cutmix, then
                                 lam = 1 - box area / (H W)

and when both are on, cutmix with probability train.mix_switch_prob. The targets are
lam t_b + (1 - lam) t_{B-1-b} of the smoothed one-hot t = (1 - s) one-hot + s / K
(s = train.label_smoothing). This is timm's `Mixup` in its "batch" mode as VideoMAE
fine-tunes with it (MCG-NJU/VideoMAE run_class_finetuning.py: mixup 0.8, cutmix 1.0,
mixup_prob 1, switch prob 0.5, smoothing 0.1; its mixup.py: the box of `rand_bbox`, a
centre drawn uniformly over the frame and sides sqrt(1 - lam) of the frame's, clipped at
the edges, and lam corrected to the box's area).

The draw happens on the host, once per optimiser step, from a generator seeded by
(runtime.seed, step), so a resumed run draws what an uninterrupted one would; every replica
and micro-batch of the step uses the same draw (timm draws per loader batch, on each
GPU). `MixDraw.as_array` is what the step reads, from a variable the host assigns.

Nothing here imports TensorFlow except `mixed_clips` and `mixed_targets`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from actrec.config.recipe import TrainConfig

STATE_SIZE = 6


@dataclass(frozen=True)
class MixSettings:
    """The train section's mixing: the Beta parameters (0: that kind off), the chance that
    a step mixes at all and that a step with both kinds on cuts."""

    mixup: float
    cutmix: float
    prob: float
    switch_prob: float

    @classmethod
    def of(cls, train: TrainConfig) -> MixSettings | None:
        """The mixing `train` asks for; None when mixup and cutmix are both 0 (off)."""
        if not train.mixup and not train.cutmix:
            return None
        return cls(train.mixup, train.cutmix, train.mix_prob, train.mix_switch_prob)


@dataclass(frozen=True)
class MixDraw:
    """One step's mixing: clip_weight multiplies each clip outside the box (mixup's lam;
    1 for cutmix and for a step that does not mix); box = (y0, y1, x0, x1), the rows and
    columns taken from the paired clip (empty: (0, 0, 0, 0)); label_weight is the targets'
    lam."""

    clip_weight: float
    box: tuple[int, int, int, int]
    label_weight: float

    def as_array(self) -> np.ndarray:
        """float32 [6]: clip_weight, y0, y1, x0, x1, label_weight."""
        return np.array([self.clip_weight, *self.box, self.label_weight], dtype=np.float32)


NO_MIX = MixDraw(1.0, (0, 0, 0, 0), 1.0)


def step_generator(seed: int, step: int) -> np.random.Generator:
    """The generator of optimiser step `step` (from 0) of a run seeded `seed`."""
    return np.random.default_rng((int(seed), int(step)))


def cutmix_box(
    lam: float, centre: tuple[int, int], height: int, width: int
) -> tuple[int, int, int, int]:
    """(y0, y1, x0, x1): the box of sides int(H sqrt(1 - lam)), int(W sqrt(1 - lam)) around
    `centre` (row, column), clipped to the frame (timm's rand_bbox)."""
    ratio = math.sqrt(1.0 - lam)
    cut_h, cut_w = int(height * ratio), int(width * ratio)
    row, column = centre
    y0, y1 = (min(max(value, 0), height) for value in (row - cut_h // 2, row + cut_h // 2))
    x0, x1 = (min(max(value, 0), width) for value in (column - cut_w // 2, column + cut_w // 2))
    return y0, y1, x0, x1


def mix_draw(settings: MixSettings, generator: np.random.Generator, height: int, width: int):
    """The MixDraw of one step for frames of height x width pixels."""
    if generator.random() >= settings.prob:
        return NO_MIX
    use_cutmix = settings.cutmix > 0
    if settings.mixup > 0 and settings.cutmix > 0:
        use_cutmix = generator.random() < settings.switch_prob
    alpha = settings.cutmix if use_cutmix else settings.mixup
    lam = float(generator.beta(alpha, alpha))
    if not use_cutmix:
        return MixDraw(lam, (0, 0, 0, 0), lam)
    centre = (int(generator.integers(0, height)), int(generator.integers(0, width)))
    y0, y1, x0, x1 = cutmix_box(lam, centre, height, width)
    return MixDraw(1.0, (y0, y1, x0, x1), 1.0 - (y1 - y0) * (x1 - x0) / (height * width))


def mixed_clips(clips, state):
    """clips [B, ..., H, W, C] mixed with themselves reversed along B by `state` (a
    MixDraw.as_array, float32 [6]): float32 (the clips' dtype when floating)."""
    import tensorflow as tf

    if not clips.dtype.is_floating:
        clips = tf.cast(clips, tf.float32)
    dtype = clips.dtype
    state = tf.cast(state, tf.float32)
    height, width = tf.shape(clips)[-3], tf.shape(clips)[-2]
    rows = tf.cast(tf.range(height), tf.float32)[:, None]
    columns = tf.cast(tf.range(width), tf.float32)[None, :]
    inside = (
        (rows >= state[1]) & (rows < state[2]) & (columns >= state[3]) & (columns < state[4])
    )  # [H, W]
    own = tf.where(inside, 0.0, state[0])[..., None]  # [H, W, 1]: the clip's own share
    own = tf.cast(own, dtype)
    return clips * own + tf.reverse(clips, axis=[0]) * (1 - own)


def mixed_targets(labels, state, classes: int, label_smoothing: float):
    """float32 [B, classes]: label_weight t_b + (1 - label_weight) t_{B-1-b} of the
    smoothed one-hot targets t of int labels [B]."""
    import tensorflow as tf

    targets = tf.one_hot(labels, classes) * (1.0 - label_smoothing) + label_smoothing / classes
    weight = tf.cast(state[5], tf.float32)
    return targets * weight + tf.reverse(targets, axis=[0]) * (1.0 - weight)
