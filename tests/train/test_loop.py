"""actrec.train.loop.trainer in one process: accumulation, clipping, learning rate, mixed precision,
K-step averaging with one worker, Adam state options, evaluation and resuming."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from actrec.config.recipe import TrainConfig
from actrec.errors import ConfigError

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from actrec.cluster.strategy import build_strategy  # noqa: E402
from actrec.train.loop.trainer import DistributedTrainer  # noqa: E402

CLASSES = 3
SHAPE = (6, 6, 2)
PLAIN_SGD = TrainConfig(optimizer="sgd", momentum=0.0, weight_decay=0.0, clip_norm=None)
KAVG_2 = {"sync": "kavg", "kavg_steps": 2}


@pytest.fixture(scope="module")
def strategy():
    return build_strategy("one-device", environ={})


def data(num_examples: int, seed: int = 0):
    """Deterministic (clips float32 [N, 6, 6, 2], labels int32 [N])."""
    rng = np.random.default_rng(seed)
    clips = rng.normal(size=(num_examples, *SHAPE)).astype("float32")
    labels = rng.integers(0, CLASSES, size=num_examples).astype("int32")
    return clips, labels


def tiny_model():
    return keras.Sequential(
        [
            keras.Input(SHAPE),
            keras.layers.Flatten(),
            keras.layers.Dense(8, activation="tanh"),
            keras.layers.Dense(CLASSES),
        ]
    )


def batches(trainer, clips, labels, batch_size: int):
    def dataset_fn(context):
        return tf.data.Dataset.from_tensor_slices((clips, labels)).batch(batch_size)

    return iter(trainer.distribute(dataset_fn))


def weights(trainer) -> list[np.ndarray]:
    return [np.array(variable.value) for variable in trainer.model.trainable_variables]


def max_relative_difference(first, second) -> float:
    return max(
        float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-12))
        for a, b in zip(first, second, strict=True)
    )


def global_norm(arrays) -> float:
    return float(np.sqrt(sum(np.sum(np.square(array)) for array in arrays)))


def test_accumulated_micro_batches_give_the_update_of_one_large_batch(strategy):
    clips, labels = data(24)
    large = DistributedTrainer(strategy, tiny_model, PLAIN_SGD, seed=1)
    accumulated = DistributedTrainer(strategy, tiny_model, PLAIN_SGD, seed=1)
    assert max_relative_difference(weights(large), weights(accumulated)) == 0.0
    large_batches, accumulated_batches = (
        batches(large, clips, labels, 8),
        batches(accumulated, clips, labels, 8),
    )
    for _ in range(3):
        large_values = large.train_step(next(large_batches), 0.5, accumulation_steps=1)
        accumulated_values = accumulated.train_step(
            next(accumulated_batches), 0.5, accumulation_steps=4
        )
        assert accumulated_values["loss"] == pytest.approx(large_values["loss"], rel=1e-5)
        assert accumulated_values["accuracy"] == large_values["accuracy"]
    difference = max_relative_difference(weights(accumulated), weights(large))
    print(f"accumulation 4 x 2 vs batch 8: max relative difference {difference:.2e}")
    assert difference <= 1e-5
    assert (
        max_relative_difference(
            weights(large), weights(DistributedTrainer(strategy, tiny_model, PLAIN_SGD, seed=1))
        )
        > 1e-3
    )  # training moved the weights
    assert accumulated.num_traces == 1 and accumulated.step == 3


def test_a_batch_that_does_not_split_into_micro_batches_is_refused(strategy):
    trainer = DistributedTrainer(strategy, tiny_model, PLAIN_SGD)
    with pytest.raises(ConfigError, match="batch of 8 examples cannot be split into 3"):
        trainer.train_step(next(batches(trainer, *data(8), 8)), 0.1, accumulation_steps=3)


def test_clipping_caps_the_global_norm_of_the_update(strategy):
    clips, labels = data(8)
    clipped = DistributedTrainer(strategy, tiny_model, replace(PLAIN_SGD, clip_norm=0.01), seed=2)
    free = DistributedTrainer(strategy, tiny_model, PLAIN_SGD, seed=2)
    before = weights(free)
    for trainer in (clipped, free):
        trainer.train_step(next(batches(trainer, clips, labels, 8)), 1.0)
    free_update = [after - start for after, start in zip(weights(free), before, strict=True)]
    clipped_update = [after - start for after, start in zip(weights(clipped), before, strict=True)]
    assert global_norm(free_update) > 0.05  # the clip is active
    assert global_norm(clipped_update) == pytest.approx(0.01, rel=1e-3)
    scale = global_norm(clipped_update) / global_norm(free_update)
    for clipped_part, free_part in zip(clipped_update, free_update, strict=True):  # same direction
        np.testing.assert_allclose(clipped_part, free_part * scale, atol=1e-6)


def test_learning_rate_changes_take_effect_without_retracing(strategy):
    clips, labels = data(32)
    trainer = DistributedTrainer(strategy, tiny_model, PLAIN_SGD)
    stream = batches(trainer, clips, labels, 8)
    trainer.train_step(next(stream), 0.1)
    frozen = weights(trainer)
    trainer.train_step(next(stream), 0.0)
    assert max_relative_difference(weights(trainer), frozen) == 0.0
    trainer.train_step(next(stream), 0.3)
    assert max_relative_difference(weights(trainer), frozen) > 1e-4
    assert float(trainer.optimizer.learning_rate.numpy()) == pytest.approx(0.3)
    trainer.train_step(next(stream), 0.05)
    assert trainer.num_traces == 1


@pytest.mark.parametrize(
    ("precision", "compute_dtype"), [("bfloat16", "bfloat16"), ("float16", "float16")]
)
def test_mixed_precision_trains_and_restores_the_global_policy(strategy, precision, compute_dtype):
    clips, labels = data(16)
    trainer = DistributedTrainer(
        strategy,
        tiny_model,
        replace(PLAIN_SGD, optimizer="adam", mixed_precision=precision),
    )
    assert keras.mixed_precision.global_policy().name == "float32"
    assert trainer.model.layers[-1].compute_dtype == compute_dtype
    assert isinstance(trainer.optimizer, keras.optimizers.LossScaleOptimizer) == (
        precision == "float16"
    )
    dataset = tf.data.Dataset.from_tensor_slices((clips, labels)).batch(16).repeat()
    stream = iter(trainer.distribute(lambda context: dataset))
    losses = [trainer.train_step(next(stream), 0.01)["loss"] for _ in range(15)]
    assert all(np.isfinite(losses))
    assert losses[-1] < 0.8 * losses[0]


def test_kavg_with_one_worker_trains_like_allreduce(strategy):
    clips, labels = data(32)
    averaged = DistributedTrainer(strategy, tiny_model, replace(PLAIN_SGD, **KAVG_2), seed=3)
    synchronous = DistributedTrainer(strategy, tiny_model, PLAIN_SGD, seed=3)
    assert averaged.num_replicas_in_sync == 1
    for trainer in (averaged, synchronous):
        stream = batches(trainer, clips, labels, 8)
        for _ in range(3):
            trainer.train_step(next(stream), 0.2)
        trainer.synchronize()
    assert averaged.num_all_reduces == 2  # the round after step 2, then synchronize()
    averaged.synchronize()
    assert averaged.num_all_reduces == 2  # nothing new to average
    assert synchronous.num_all_reduces == 3
    assert max_relative_difference(weights(averaged), weights(synchronous)) <= 1e-6


def adam_moments(trainer) -> list[np.ndarray]:
    rate = trainer.optimizer.learning_rate
    return [
        np.array(variable.value)
        for variable in trainer.optimizer.variables
        if "float" in str(variable.dtype) and variable is not rate
    ]


@pytest.mark.parametrize("adam_state", ["average", "local", "reset"])
def test_adam_state_options(strategy, adam_state):
    clips, labels = data(16)
    trainer = DistributedTrainer(
        strategy,
        tiny_model,
        replace(PLAIN_SGD, optimizer="adam", adam_state=adam_state, **KAVG_2),
    )
    stream = batches(trainer, clips, labels, 8)
    trainer.train_step(next(stream), 0.01)  # a local step: moments grow
    assert global_norm(adam_moments(trainer)) > 0
    trainer.train_step(next(stream), 0.01)  # step 2: an averaging round
    assert trainer.num_all_reduces == 1
    moments_norm = global_norm(adam_moments(trainer))
    if adam_state == "reset":
        assert moments_norm == 0.0
        assert int(trainer.optimizer.iterations.numpy()) == 0  # bias correction restarts
    else:
        assert moments_norm > 0
        assert int(trainer.optimizer.iterations.numpy()) == 2
    moment_ids = {id(variable) for variable in trainer.optimizer.variables}
    averaged_moments = [
        variable for variable in trainer._averaged_variables if id(variable) in moment_ids
    ]
    assert bool(averaged_moments) == (adam_state == "average")


def test_weight_decay_spares_biases(strategy):
    clips, labels = data(8)
    decayed = DistributedTrainer(strategy, tiny_model, replace(PLAIN_SGD, weight_decay=0.1), seed=4)
    plain = DistributedTrainer(strategy, tiny_model, PLAIN_SGD, seed=4)
    start = weights(plain)
    for trainer in (decayed, plain):
        trainer.train_step(next(batches(trainer, clips, labels, 8)), 0.5)
    for variable, initial, with_decay, without in zip(
        plain.model.trainable_variables, start, weights(decayed), weights(plain), strict=True
    ):
        if len(variable.shape) <= 1:
            np.testing.assert_array_equal(with_decay, without)
        else:
            np.testing.assert_allclose(with_decay - without, -0.5 * 0.1 * initial, atol=1e-6)


def test_evaluate_matches_a_direct_computation_including_a_partial_batch(strategy):
    clips, labels = data(23)
    trainer = DistributedTrainer(strategy, tiny_model, replace(PLAIN_SGD, label_smoothing=0.1))

    def dataset_fn(context):
        return tf.data.Dataset.from_tensor_slices((clips, labels)).batch(5)

    result = trainer.evaluate(trainer.distribute(dataset_fn))
    logits = np.array(trainer.model(clips, training=False))
    targets = np.eye(CLASSES)[labels] * 0.9 + 0.1 / CLASSES
    log_probabilities = logits - np.log(np.sum(np.exp(logits), axis=1, keepdims=True))
    assert result["num_examples"] == 23
    assert result["loss"] == pytest.approx(
        float(np.mean(-np.sum(targets * log_probabilities, axis=1))), rel=1e-5
    )
    assert result["accuracy"] == pytest.approx(float(np.mean(logits.argmax(1) == labels)))


def test_checkpoint_items_resume_bit_exactly(strategy, tmp_path):
    clips, labels = data(16)
    trainer = DistributedTrainer(strategy, tiny_model, replace(PLAIN_SGD, momentum=0.9))
    stream = batches(trainer, clips, labels, 8)
    first, second = next(stream), next(stream)
    trainer.train_step(first, 0.1)
    checkpoint = tf.train.Checkpoint(**trainer.checkpoint_items())
    path = checkpoint.save(str(tmp_path / "checkpoint"))
    trainer.train_step(second, 0.1)
    continued = weights(trainer)
    checkpoint.restore(path)
    assert trainer.step == 1
    trainer.train_step(second, 0.1)
    assert max_relative_difference(weights(trainer), continued) == 0.0


def test_invalid_settings_are_config_errors(strategy):
    with pytest.raises(ConfigError, match=r"optimizer='rmsprop'.*sgd, adam"):
        DistributedTrainer(strategy, tiny_model, replace(PLAIN_SGD, optimizer="rmsprop"))
    with pytest.raises(ConfigError, match="adam_state='shared'"):
        DistributedTrainer(strategy, tiny_model, replace(PLAIN_SGD, adam_state="shared"))
    with pytest.raises(ConfigError, match="kavg_steps=0"):
        DistributedTrainer(strategy, tiny_model, replace(PLAIN_SGD, sync="kavg", kavg_steps=0))
    with pytest.raises(ConfigError, match="sync='gossip'"):
        DistributedTrainer(strategy, tiny_model, replace(PLAIN_SGD, sync="gossip"))
    with pytest.raises(ConfigError, match="mixed_precision='int8'"):
        DistributedTrainer(strategy, tiny_model, replace(PLAIN_SGD, mixed_precision="int8"))
    with pytest.raises(ConfigError, match=r"built keras.Model"):
        DistributedTrainer(strategy, lambda: keras.Sequential([keras.layers.Dense(2)]), PLAIN_SGD)


def test_kavg_refuses_several_replicas_in_one_process():
    two_gpus = SimpleNamespace(
        extended=SimpleNamespace(worker_devices=("/gpu:0", "/gpu:1")), num_replicas_in_sync=2
    )
    with pytest.raises(ConfigError, match=r"one replica per worker.*actrec launch"):
        DistributedTrainer(two_gpus, tiny_model, replace(PLAIN_SGD, sync="kavg", kavg_steps=4))
