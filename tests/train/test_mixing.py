"""Mixup / CutMix (actrec.train.loop.mixing): the seeded draws, the mixed pixels, the mixed
and smoothed targets, and a training step that uses them."""

from __future__ import annotations

import numpy as np
import pytest

from actrec.config.recipe import TrainConfig
from actrec.config.validate import validate_train_section
from actrec.errors import ConfigError
from actrec.train.loop.mixing import (
    NO_MIX,
    MixDraw,
    MixSettings,
    cutmix_box,
    mix_draw,
    step_generator,
)

VIDEOMAE = TrainConfig(mixup=0.8, cutmix=1.0, label_smoothing=0.1)


def test_the_draws_of_a_seed_are_fixed_and_cutmix_corrects_lam_to_the_box():
    settings = MixSettings.of(VIDEOMAE)
    assert settings == MixSettings(0.8, 1.0, 1.0, 0.5)
    draws = [mix_draw(settings, step_generator(7, step), 32, 32) for step in range(3)]
    assert draws[0].box == (0, 0, 0, 0)  # mixup: lam ~ Beta(0.8, 0.8)
    assert draws[0].clip_weight == draws[0].label_weight == pytest.approx(0.824321965935126)
    assert draws[1] == MixDraw(1.0, (7, 27, 3, 23), 0.609375)  # 1 - 20 x 20 / 32 ** 2
    assert draws[2] == MixDraw(1.0, (0, 11, 0, 15), 0.8388671875)  # clipped at the corner
    assert mix_draw(settings, step_generator(7, 1), 32, 32) == draws[1]  # a resume redraws it
    assert MixSettings.of(TrainConfig()) is None  # off by default
    never = MixSettings(0.8, 0.0, 1e-9, 0.5)
    assert mix_draw(never, step_generator(0, 0), 32, 32) == NO_MIX


def test_the_cutmix_box_is_timms_rand_bbox():
    # lam 0.75: sides int(32 x 0.5) = 16 around the centre, clipped to the frame
    assert cutmix_box(0.75, (16, 16), 32, 32) == (8, 24, 8, 24)
    assert cutmix_box(0.75, (2, 30), 32, 32) == (0, 10, 22, 32)
    assert cutmix_box(1.0, (5, 5), 32, 32) == (5, 5, 5, 5)  # lam 1: an empty box


tf = pytest.importorskip("tensorflow")

from actrec.train.loop.mixing import mixed_clips, mixed_targets  # noqa: E402


def clips_of(size: int = 3, seed: int = 0) -> np.ndarray:
    """[size, 2 frames, 6, 5, 3] float32."""
    return np.random.default_rng(seed).normal(size=(size, 2, 6, 5, 3)).astype("float32")


def test_mixup_blends_each_clip_with_its_partner_in_reverse_order():
    clips = clips_of()
    mixed = np.array(mixed_clips(tf.constant(clips), MixDraw(0.7, (0, 0, 0, 0), 0.7).as_array()))
    np.testing.assert_allclose(mixed, 0.7 * clips + 0.3 * clips[::-1], rtol=1e-6)


def test_cutmix_takes_the_box_of_every_frame_from_the_partner():
    clips = clips_of()
    mixed = np.array(mixed_clips(tf.constant(clips), MixDraw(1.0, (1, 4, 2, 5), 0.6).as_array()))
    expected = clips.copy()
    expected[:, :, 1:4, 2:5] = clips[::-1][:, :, 1:4, 2:5]
    np.testing.assert_array_equal(mixed, expected)
    assert not np.array_equal(mixed[0], clips[0])  # the box came from clip 2


def test_uint8_clips_are_mixed_as_float32():
    clips = np.arange(2 * 1 * 2 * 2 * 1, dtype=np.uint8).reshape(2, 1, 2, 2, 1)
    mixed = mixed_clips(tf.constant(clips), MixDraw(0.25, (0, 0, 0, 0), 0.25).as_array())
    assert mixed.dtype == tf.float32
    np.testing.assert_allclose(np.array(mixed).ravel(), [3, 4, 5, 6, 1, 2, 3, 4])


def test_targets_are_the_smoothed_one_hots_mixed_by_label_weight():
    """labels 0, 2, 1 of 4 classes, smoothing 0.1 (on 0.925, off 0.025), lam 0.7: clip 0's
    partner is clip 2 (label 1), clip 1 is its own partner."""
    state = MixDraw(1.0, (0, 1, 0, 1), 0.7).as_array()
    targets = np.array(mixed_targets(tf.constant([0, 2, 1]), state, 4, 0.1))
    np.testing.assert_allclose(
        targets,
        [
            [0.655, 0.295, 0.025, 0.025],  # 0.7 t(0) + 0.3 t(1)
            [0.025, 0.025, 0.925, 0.025],  # t(2) with itself
            [0.295, 0.655, 0.025, 0.025],  # 0.7 t(1) + 0.3 t(0)
        ],
        rtol=1e-6,
    )
    np.testing.assert_allclose(targets.sum(axis=1), 1.0, rtol=1e-6)


def test_mixing_with_distillation_is_refused():
    with pytest.raises(ConfigError, match="mix the student's clips and the flow teacher"):
        validate_train_section(TrainConfig(cutmix=1.0, distill_from="runs/flow"))
    with pytest.raises(ConfigError, match=r"train.mix_prob=0 is not valid; use a probability"):
        validate_train_section(TrainConfig(mix_prob=0))


def test_a_training_step_learns_from_the_mixed_clips_and_targets():
    """The step's loss is the soft cross-entropy of the host's draw for (seed, step 0)."""
    import keras

    from actrec.cluster.strategy import build_strategy
    from actrec.train.loop.trainer import DistributedTrainer

    def model():
        layers = keras.layers
        return keras.Sequential(
            [keras.Input((2, 6, 5, 3)), layers.Flatten(), layers.Dense(4, name="classifier")]
        )

    settings = TrainConfig(
        mixup=0.8, cutmix=1.0, label_smoothing=0.1, weight_decay=0.0, clip_norm=None
    )
    trainer = DistributedTrainer(build_strategy("one-device", environ={}), model, settings, seed=7)
    clips, labels = clips_of(4, seed=1), np.array([0, 3, 1, 2], dtype=np.int32)
    logits_of = keras.Model(trainer.model.inputs, trainer.model.outputs)  # the weights before
    draw = mix_draw(MixSettings.of(settings), step_generator(7, 0), 6, 5)
    mixed = mixed_clips(tf.constant(clips), draw.as_array())
    targets = mixed_targets(tf.constant(labels), draw.as_array(), 4, 0.1)
    expected = float(
        tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(targets, logits_of(mixed)))
    )
    dataset = tf.data.Dataset.from_tensors((clips, labels))
    result = trainer.train_step(next(iter(trainer.distribute(lambda context: dataset))), 0.1)
    np.testing.assert_array_equal(np.array(trainer.mix_state), draw.as_array())
    assert result["loss"] == pytest.approx(expected, rel=1e-5)
