"""Batch-size schedule, learning-rate coupling, warm-up, decay and epoch plans."""

from __future__ import annotations

import math

import pytest

from actrec.config.files import load_recipe
from actrec.config.recipe import RuntimeConfig, TrainConfig
from actrec.errors import ConfigError
from actrec.train.schedule import (
    EpochPlan,
    batch_schedule_summary,
    coupled_learning_rate,
    epoch_plan,
    global_batch_size,
    learning_rate,
    learning_rate_summary,
)

BASE_LR = 0.1


def adaptive(coupling: str = "linear", **changes) -> TrainConfig:
    """B_0 = 16 doubling every epoch up to 64; no warm-up, no decay."""
    values = dict(
        epochs=10,
        batch_size=16,
        batch_growth=2.0,
        batch_growth_every=1,
        max_batch_size=64,
        lr=BASE_LR,
        lr_coupling=coupling,
        decay="none",
        decay_epochs=(),
    )
    values.update(changes)
    return TrainConfig(**values)


# --- batch schedule -----------------------------------------------------------------------


def test_adaptive_batches_grow_and_cap():
    train = adaptive()
    assert [global_batch_size(train, epoch) for epoch in range(4)] == [16, 32, 64, 64]
    assert global_batch_size(train, 1000) == 64
    assert all(isinstance(global_batch_size(train, epoch), int) for epoch in range(4))


def test_cap_between_growth_steps():
    train = adaptive(max_batch_size=48)
    assert [global_batch_size(train, epoch) for epoch in range(4)] == [16, 32, 48, 48]


def test_growth_every_three_epochs_without_cap():
    train = adaptive(batch_growth_every=3, max_batch_size=None)
    assert [global_batch_size(train, epoch) for epoch in range(7)] == [16, 16, 16, 32, 32, 32, 64]


def test_fractional_growth_rounds_down():
    train = adaptive(batch_size=10, batch_growth=1.5, max_batch_size=None)
    assert [global_batch_size(train, epoch) for epoch in range(4)] == [10, 15, 22, 33]
    decimal = adaptive(batch_size=100, batch_growth=1.1, max_batch_size=None)
    assert [global_batch_size(decimal, epoch) for epoch in range(3)] == [100, 110, 121]


def test_constant_batch():
    train = TrainConfig(batch_size=48)
    assert {global_batch_size(train, epoch) for epoch in range(50)} == {48}
    no_period = TrainConfig(batch_size=48, batch_growth=2.0, batch_growth_every=0)
    assert global_batch_size(no_period, 20) == 48


def test_kavg_recipe_schedule():
    train = load_recipe("two-stream-kavg-adaptive-rgb-ucf101").train
    batches = [global_batch_size(train, epoch) for epoch in (0, 9, 10, 19, 20, 29, 30, 79)]
    assert batches == [64, 64, 128, 128, 256, 256, 512, 512]
    assert {learning_rate(train, epoch, 0, 10) for epoch in range(0, 60)} == {train.lr}


def test_negative_epoch_is_rejected():
    with pytest.raises(ConfigError, match="epoch=-1"):
        global_batch_size(adaptive(), -1)


# --- coupling -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("coupling", "factors"),
    [
        ("linear", [1, 2, 4, 4]),
        ("constant", [1, 1, 1, 1]),
        ("sqrt", [1, math.sqrt(2), 2, 2]),
    ],
)
def test_learning_rate_follows_the_batch(coupling, factors):
    train = adaptive(coupling)
    rates = [learning_rate(train, epoch, 0, 10) for epoch in range(4)]
    assert rates == pytest.approx([BASE_LR * factor for factor in factors], rel=1e-12)


def test_reference_batch_other_than_batch_size():
    train = TrainConfig(batch_size=64, lr=0.02, lr_reference_batch=128, lr_coupling="linear")
    assert coupled_learning_rate(train, 64) == pytest.approx(0.01)
    assert coupled_learning_rate(train, 256) == pytest.approx(0.04)
    sqrt = TrainConfig(batch_size=64, lr=0.02, lr_reference_batch=128, lr_coupling="sqrt")
    assert coupled_learning_rate(sqrt, 512) == pytest.approx(0.04)
    constant = TrainConfig(batch_size=64, lr=0.02, lr_reference_batch=128, lr_coupling="constant")
    assert coupled_learning_rate(constant, 512) == 0.02


def test_tsm_recipe_lr_scales_with_batch():
    train = load_recipe("tsm-kinetics400").train
    assert coupled_learning_rate(train, 64) == pytest.approx(0.01)
    assert coupled_learning_rate(train, 256) == pytest.approx(0.04)


# --- warm-up and decay --------------------------------------------------------------------


def test_linear_warmup_per_step_from_a_tenth():
    train = TrainConfig(lr=1.0, batch_size=32, warmup_epochs=2.0, decay="none", epochs=10)
    steps = 10

    def rate(epoch, step):
        return learning_rate(train, epoch, step, steps)

    assert rate(0, 0) == pytest.approx(0.1)
    assert rate(0, 5) == pytest.approx(0.1 + 0.9 * 0.25)
    assert rate(1, 0) == pytest.approx(0.55)
    assert rate(1, 9) == pytest.approx(0.1 + 0.9 * 0.95)
    assert rate(2, 0) == pytest.approx(1.0)
    assert rate(5, 3) == pytest.approx(1.0)


def test_warmup_multiplies_the_coupled_rate():
    train = adaptive("linear", warmup_epochs=2.0)
    # Epoch 1: batch 32 -> coupled 0.2; progress 1.5 of 2 warm-up epochs.
    assert learning_rate(train, 1, 5, 10) == pytest.approx(0.2 * (0.1 + 0.9 * 0.75))


def test_step_decay():
    train = TrainConfig(lr=1.0, batch_size=32, decay="step", decay_epochs=(2, 4), epochs=6)
    rates = [learning_rate(train, epoch, 3, 10) for epoch in range(6)]
    assert rates == pytest.approx([1, 1, 0.1, 0.1, 0.01, 0.01], rel=1e-12)
    half = TrainConfig(lr=1.0, batch_size=32, decay_epochs=(1,), decay_factor=0.5)
    assert learning_rate(half, 1, 0, 10) == pytest.approx(0.5)


def test_step_decay_of_the_tsn_recipe():
    train = load_recipe("tsn-rgb-ucf101").train
    assert learning_rate(train, 19, 73, 74) == pytest.approx(0.001)
    assert learning_rate(train, 20, 0, 74) == pytest.approx(0.0001)
    assert learning_rate(train, 41, 0, 74) == pytest.approx(0.00001)


def test_cosine_decay_without_warmup():
    train = TrainConfig(lr=1.0, batch_size=32, decay="cosine", epochs=10)
    assert learning_rate(train, 0, 0, 4) == pytest.approx(1.0)
    assert learning_rate(train, 5, 0, 4) == pytest.approx(0.5)
    assert learning_rate(train, 2, 2, 4) == pytest.approx(0.5 * (1 + math.cos(math.pi * 0.25)))
    assert learning_rate(train, 9, 3, 4) == pytest.approx(0.5 * (1 + math.cos(math.pi * 9.75 / 10)))


def test_cosine_decay_after_warmup():
    train = TrainConfig(lr=1.0, batch_size=32, decay="cosine", epochs=12, warmup_epochs=2.0)
    assert learning_rate(train, 1, 0, 10) == pytest.approx(0.55)  # warm-up only
    assert learning_rate(train, 2, 0, 10) == pytest.approx(1.0)
    assert learning_rate(train, 7, 0, 10) == pytest.approx(0.5)  # half of the 10 cosine epochs
    assert learning_rate(train, 12, 0, 10) == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize(
    ("epoch", "step", "steps_per_epoch", "expected"),
    [(-1, 0, 10, "epoch=-1"), (0, -1, 10, "step=-1"), (0, 0, 0, "steps_per_epoch=0")],
)
def test_learning_rate_rejects_bad_positions(epoch, step, steps_per_epoch, expected):
    with pytest.raises(ConfigError, match=expected):
        learning_rate(TrainConfig(), epoch, step, steps_per_epoch)


# --- epoch plans --------------------------------------------------------------------------


def test_epoch_plan_splits_the_batch_over_replicas():
    train = adaptive()
    plan = epoch_plan(train, RuntimeConfig(), epoch=2, num_replicas=4, num_train_videos=1000)
    assert plan == EpochPlan(
        epoch=2,
        global_batch=64,
        per_replica_batch=16,
        accumulation_steps=1,
        steps_per_epoch=1000 // 64,
        learning_rate_start=pytest.approx(0.4),
    )


def test_epoch_plan_rejects_an_uneven_split():
    train = TrainConfig(batch_size=30)
    with pytest.raises(ConfigError) as caught:
        epoch_plan(train, RuntimeConfig(), epoch=0, num_replicas=4, num_train_videos=100)
    message = str(caught.value)
    assert "train.batch_size" in message and "30" in message and "4 replicas" in message


def test_epoch_plan_rejects_bad_replica_count():
    with pytest.raises(ConfigError, match="num_replicas=0"):
        epoch_plan(TrainConfig(), RuntimeConfig(), 0, 0, 100)


def test_accumulation_makes_up_a_share_above_the_limit():
    train = TrainConfig(batch_size=64, max_per_replica_batch=16)
    plan = epoch_plan(train, RuntimeConfig(), epoch=0, num_replicas=1, num_train_videos=640)
    assert (plan.per_replica_batch, plan.accumulation_steps) == (16, 4)
    assert plan.global_batch == 64 and plan.steps_per_epoch == 10
    two = epoch_plan(
        TrainConfig(batch_size=128, max_per_replica_batch=16), RuntimeConfig(), 0, 2, 640
    )
    assert (two.per_replica_batch, two.accumulation_steps) == (16, 4)


def test_accumulation_follows_the_growing_batch():
    train = adaptive(max_per_replica_batch=16)
    plans = [epoch_plan(train, RuntimeConfig(), epoch, 2, 1000) for epoch in range(3)]
    assert [(plan.per_replica_batch, plan.accumulation_steps) for plan in plans] == [
        (8, 1),
        (16, 1),
        (16, 2),
    ]


def test_share_within_the_limit_needs_no_accumulation():
    train = TrainConfig(batch_size=64, max_per_replica_batch=64)
    plan = epoch_plan(train, RuntimeConfig(), 0, 1, 640)
    assert (plan.per_replica_batch, plan.accumulation_steps) == (64, 1)


def test_explicit_accumulation_steps():
    plan = epoch_plan(TrainConfig(batch_size=64, accumulation_steps=2), RuntimeConfig(), 0, 1, 64)
    assert (plan.per_replica_batch, plan.accumulation_steps) == (32, 2)
    larger = TrainConfig(batch_size=64, accumulation_steps=8, max_per_replica_batch=16)
    plan = epoch_plan(larger, RuntimeConfig(), 0, 1, 64)
    assert (plan.per_replica_batch, plan.accumulation_steps) == (8, 8)


def test_accumulation_that_does_not_divide_is_rejected_with_a_working_value():
    train = TrainConfig(batch_size=40, max_per_replica_batch=16)
    with pytest.raises(ConfigError) as caught:
        epoch_plan(train, RuntimeConfig(), 0, 1, 400)
    message = str(caught.value)
    assert "40 clips" in message and "3 equal micro-batches" in message
    assert "train.accumulation_steps=4" in message  # 4 x 10 fits under 16
    explicit = TrainConfig(batch_size=64, accumulation_steps=3)
    with pytest.raises(ConfigError, match=r"train\.accumulation_steps=4"):
        epoch_plan(explicit, RuntimeConfig(), 0, 1, 400)


def test_steps_per_epoch():
    train = TrainConfig(batch_size=256)
    assert epoch_plan(train, RuntimeConfig(), 0, 1, 9537).steps_per_epoch == 37
    assert epoch_plan(train, RuntimeConfig(), 0, 1, 100).steps_per_epoch == 1
    fixed = RuntimeConfig(steps_per_epoch=5)
    assert epoch_plan(train, fixed, 0, 1, 9537).steps_per_epoch == 5


def test_plan_learning_rate_start_includes_warmup_and_decay():
    train = TrainConfig(
        batch_size=32, lr=1.0, warmup_epochs=4.0, decay_epochs=(1,), decay_factor=0.5
    )
    plan = epoch_plan(train, RuntimeConfig(), 2, 1, 320)
    assert plan.learning_rate_start == pytest.approx((0.1 + 0.9 * 0.5) * 0.5)
    assert plan.learning_rate_start == learning_rate(train, 2, 0, plan.steps_per_epoch)


# --- summaries ----------------------------------------------------------------------------


def test_summaries():
    assert batch_schedule_summary(TrainConfig(batch_size=256)) == "256"
    assert batch_schedule_summary(adaptive()) == "16->64 x2/1ep"
    assert batch_schedule_summary(adaptive(max_batch_size=None)) == "16 x2/1ep"
    assert learning_rate_summary(TrainConfig(lr=0.001, batch_size=256)) == "0.001 linear@256"
    assert learning_rate_summary(adaptive("constant")) == "0.1 constant"
