"""train.class_balance: the inverse-frequency weights and their effect on the step's loss,
the class-balanced order (balanced, the split's length, seeded, resumable, the same on any
number of input pipelines), and a two-step training with each setting."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from tiny_recipe import TINY_RUN_SETTINGS

from actrec.config.files import load_recipe
from actrec.config.overrides import apply_overrides
from actrec.config.recipe import TrainConfig
from actrec.errors import ConfigError, DatasetError
from actrec.train.inputs.class_balance import balance_summary, class_weights

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from actrec.data.input.balanced_order import balanced_example_video, class_members  # noqa: E402

# 25 videos: class 0 twenty, class 2 four, class 5 one (classes 1, 3, 4 absent); shuffled
LABELS = [0] * 20 + [2] * 4 + [5]
LABELS = [LABELS[index] for index in np.random.default_rng(0).permutation(len(LABELS))]


def plan(labels, examples: range, pipelines: int = 1, pipeline: int = 0, seed: int = 3):
    """The videos of `examples` of one pipeline, in order."""
    dataset = tf.data.Dataset.range(examples.start, examples.stop).map(
        lambda k: balanced_example_video(k, labels, pipelines, pipeline, seed)[0]
    )
    return [int(video) for video in dataset.as_numpy_iterator()]


def test_weights_are_the_inverse_frequencies_with_mean_one_over_the_examples():
    counts = [20, 0, 4, 0, 0, 1]
    weights = class_weights(counts)
    np.testing.assert_allclose(weights, [25 / 60, 0, 25 / 12, 0, 0, 25 / 3], rtol=1e-6)
    assert float(np.dot(weights, counts)) / sum(counts) == pytest.approx(1.0)
    np.testing.assert_allclose(class_weights([3, 3, 3]), [1, 1, 1])
    assert balance_summary("weights", counts) == (
        "class balance: weights, from 1 to 20 clips a class (loss weights 0.42-8.3, "
        "mean 1 over the clips)"
    )
    assert balance_summary("sampling", counts).startswith(
        "class balance: sampling, from 1 to 20 clips a class (each class drawn ~8.33 times"
    )


def test_a_step_weighs_each_examples_loss_by_its_class():
    from actrec.cluster.strategy import build_strategy
    from actrec.train.loop.trainer import DistributedTrainer

    strategy = build_strategy("one-device", environ={})
    rng = np.random.default_rng(0)
    clips = rng.normal(size=(8, 4)).astype("float32")
    labels = np.array([0, 0, 0, 0, 0, 1, 1, 2], "int32")

    def model():
        return keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])

    config = TrainConfig(optimizer="sgd", momentum=0.0, weight_decay=0.0, clip_norm=None)
    weights = class_weights([5, 2, 1])
    losses = {}
    for name, class_weight in (("plain", None), ("weighted", weights)):
        trainer = DistributedTrainer(strategy, model, config, seed=1, class_weights=class_weight)
        dataset = tf.data.Dataset.from_tensor_slices((clips, labels)).batch(8)
        batch = next(iter(trainer.distribute(lambda context, d=dataset: d)))
        per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=trainer.model(clips)
        ).numpy()
        losses[name] = (trainer.train_step(batch, 0.0)["loss"], per_example)
    plain, per_example = losses["plain"]
    assert plain == pytest.approx(per_example.mean(), rel=1e-5)
    weighted, _ = losses["weighted"]
    assert weighted == pytest.approx((per_example * weights[labels]).mean(), rel=1e-5)
    assert abs(weighted - plain) > 1e-3


def test_the_balanced_plan_draws_each_class_equally_in_each_epoch_of_the_splits_length():
    _, offsets, counts = class_members(LABELS)
    assert counts == [20, 4, 1] and offsets == [0, 20, 24]
    videos = plan(LABELS, range(4 * 25))
    for epoch in range(4):
        classes = collections.Counter(LABELS[v] for v in videos[epoch * 25 : (epoch + 1) * 25])
        assert sorted(classes) == [0, 2, 5]
        assert max(classes.values()) - min(classes.values()) <= 1  # 8 or 9 of 25 each
    # within a class, its videos are drawn in rounds: over whole epochs as evenly as can be
    for label in (0, 2, 5):
        draws = collections.Counter(v for v in videos if LABELS[v] == label)
        assert len(draws) == LABELS.count(label)  # every clip of the class
        assert max(draws.values()) - min(draws.values()) <= 1
    assert videos[:25] != videos[25:50]  # a new order each epoch
    assert plan(LABELS, range(50)) == videos[:50]  # seeded
    assert plan(LABELS, range(50), seed=4) != videos[:50]
    assert plan(LABELS, range(37, 60)) == videos[37:60]  # resumed at an example


@pytest.mark.parametrize("num_videos", [25, 24])
def test_two_pipelines_read_the_single_pipelines_balanced_stream(num_videos):
    labels = LABELS[:num_videos]
    single = plan(labels, range(3 * num_videos))
    length = 3 * num_videos // 2
    for pipeline in range(2):
        expected = [single[pipeline + 2 * k] for k in range(length)]
        assert plan(labels, range(length), 2, pipeline) == expected


def test_an_unlabelled_video_cannot_be_balanced():
    with pytest.raises(DatasetError, match="video 1 of the split has none"):
        class_members([0, -1, 1])


def test_a_setting_outside_the_choices_is_refused():
    from actrec.config.validate import validate_recipe

    recipe = apply_overrides(load_recipe("synthetic-rgb"), ["train.class_balance=oversample"])
    with pytest.raises(ConfigError, match=r"class_balance.*none, weights, sampling"):
        validate_recipe(recipe)


@pytest.mark.parametrize("setting", ["weights", "sampling"])  # none: every other training
def test_two_steps_train_with_each_setting(setting, tiny_synthetic_prepared, tmp_path):
    from actrec.progress import NullProgress
    from actrec.train.run import train

    class Recorder(NullProgress):
        def __init__(self):
            self.lines = []

        def message(self, text: str) -> None:
            self.lines.append(text)

    settings = [*TINY_RUN_SETTINGS, "runtime.steps_per_epoch=2", f"train.class_balance={setting}"]
    recorder = Recorder()
    summary = train(
        apply_overrides(load_recipe("synthetic-rgb"), settings),
        tiny_synthetic_prepared,
        tmp_path / "run",
        progress=recorder,
    )
    assert summary.global_step == 2
    balance_lines = [line for line in recorder.lines if line.startswith("class balance")]
    if setting == "none":
        assert balance_lines == []
    else:
        assert balance_lines == [balance_summary(setting, [2] * 8)]  # 8 classes x 2 training clips
