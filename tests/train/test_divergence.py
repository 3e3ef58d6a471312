"""What counts as a divergence, and the fault-injection setting (actrec.train.life.divergence,
actrec.train.life.faults). Rollback on real runs: tests/train/test_training_resilience.py and
tests/cluster/test_multiworker.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from actrec.cluster.collectives import agreed_counts
from actrec.config.files import load_recipe
from actrec.config.overrides import apply_overrides
from actrec.errors import ConfigError
from actrec.train.life.divergence import DivergenceGuard
from actrec.train.life.faults import NanInjection


def _guard(*settings: str) -> DivergenceGuard:
    return DivergenceGuard(apply_overrides(load_recipe("synthetic-rgb"), list(settings)).train)


@pytest.mark.parametrize("loss", [math.nan, math.inf, -math.inf])
def test_a_non_finite_loss_always_diverges(loss):
    guard = _guard()
    guard.observe(2.0)
    assert guard.reason is None
    guard.observe(loss)
    assert guard.reason == f"loss {loss}"
    guard.observe(1.0)  # the first reason stands until the workers agree on it
    assert guard.reason == f"loss {loss}"


def test_upper_bound_and_explosion_factor():
    guard = _guard("train.loss_upper_bound=10")
    guard.observe(9.9)
    assert guard.reason is None
    guard.observe(10.5)
    assert "loss 10.5 above train.loss_upper_bound=10" in guard.reason

    def exploded(next_loss: float) -> str | None:
        guard = _guard("train.loss_explosion_factor=3")
        guard.observe(40.0)  # fewer than 5 losses before it: no reference yet
        for loss in (2.0, 1.0, 2.0, 1.0, 2.0):  # the mean of the last 5 becomes 1.6
            guard.observe(loss)
        assert guard.reason is None
        guard.observe(next_loss)
        return guard.reason

    assert exploded(4.7) is None  # below 3 x 1.6
    assert exploded(4.9).startswith("loss 4.9 above train.loss_explosion_factor=3 x 1.6")


def test_recovery_state_and_learning_rate_scale():
    guard = _guard("train.recovery_lr_factor=0.5", "train.max_recoveries=2")
    assert guard.enabled and guard.lr_scale == 1 and guard.shown() == {}
    guard.state.assign([2, 7])
    assert (guard.recoveries, guard.data_skip, guard.lr_scale) == (2, 7, 0.25)
    assert guard.shown() == {"recoveries": 2}
    guard.new_phase()
    assert (guard.recoveries, guard.data_skip) == (2, 0)
    assert not _guard("train.max_recoveries=0").enabled


def test_agreement_on_one_worker_is_its_own_flags():
    assert agreed_counts(None, [True, False], 1) == [1, 0]


def test_nan_injection_is_read_from_its_variable_for_this_worker_and_fires_once():
    import tensorflow as tf

    injection = NanInjection(1, {"ACTREC_INJECT_NAN": "0:2, 1:3"})
    transform = injection.wrap(lambda clips: clips * 2.0)
    clips = tf.ones([2, 3])
    assert not injection.arm(2)  # worker 0's fault
    assert np.array_equal(transform(clips).numpy(), np.full([2, 3], 2.0))
    assert injection.arm(3)
    assert bool(tf.reduce_all(tf.math.is_nan(transform(clips))))
    assert not injection.arm(3)  # once only
    assert np.array_equal(transform(clips).numpy(), np.full([2, 3], 2.0))
    unset = NanInjection(0, {})
    finish = lambda clips: clips  # noqa: E731
    assert unset.wrap(finish) is finish and not unset.arm(1)
    with pytest.raises(ConfigError, match=r"ACTREC_INJECT_NAN='1-3'.*WORKER:STEP"):
        NanInjection(0, {"ACTREC_INJECT_NAN": "1-3"})
