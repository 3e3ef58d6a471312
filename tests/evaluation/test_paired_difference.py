"""The paired drop's interval (actrec.evaluation.paired_difference): Tango's score interval
checked against the same score inverted with SciPy's numerical maximum likelihood, its
coverage on simulated gates, and the cases the int8 gate meets."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq, minimize_scalar
from scipy.stats import norm

from actrec.evaluation.paired_difference import paired_difference


def _numerical_score(lost: int, gained: int, clips: int, drop: float) -> float:
    """The score statistic with the gained share maximised numerically (not the closed form)."""
    same = clips - lost - gained

    def negative_likelihood(gained_share: float) -> float:
        shares = (gained_share + drop, gained_share, 1 - 2 * gained_share - drop)
        counts = (lost, gained, same)
        return -sum(n * math.log(p) for n, p in zip(counts, shares, strict=True) if n)

    bounds = (max(0.0, -drop) + 1e-12, (1 - drop) / 2 - 1e-12)
    share = minimize_scalar(
        negative_likelihood, bounds=bounds, method="bounded", options={"xatol": 1e-13}
    ).x
    return (lost - gained - clips * drop) / math.sqrt(clips * (2 * share + drop * (1 - drop)))


@pytest.mark.parametrize(("lost", "gained", "clips"), [(2, 0, 56), (7, 3, 64), (30, 4, 1000)])
def test_the_bounds_invert_the_numerical_score(lost, gained, clips):
    interval = paired_difference(lost, gained, clips, confidence=0.95)
    quantile = norm.ppf(0.975)  # each bound of a 95 % interval
    measured = (lost - gained) / clips
    lower = brentq(lambda d: _numerical_score(lost, gained, clips, d) - quantile, -0.99, measured)
    upper = brentq(lambda d: _numerical_score(lost, gained, clips, d) + quantile, measured, 0.99)
    assert interval.lower == pytest.approx(lower, abs=1e-6)
    assert interval.upper == pytest.approx(upper, abs=1e-6)
    assert interval.lower < interval.drop < interval.upper and interval.drop == measured


def test_the_lower_bound_holds_at_its_confidence():
    """On 2000 simulated gates of 56 clips (4 % lost, 1 % gained), the 95 % interval's lower
    bound is above the true drop in at most 2.5 % of them (plus the simulation's spread)."""
    rng = np.random.default_rng(0)
    counts = rng.multinomial(56, [0.04, 0.01, 0.95], size=2000)
    above = [paired_difference(int(k[0]), int(k[1]), 56, 0.95).lower > 0.03 for k in counts]
    assert np.mean(above) <= 0.025 + 2 * math.sqrt(0.025 * 0.975 / 2000)


def test_the_cases_of_an_int8_gate():
    """Two clips lost of 56 (the README's refused export) are no evidence of a loss; no
    clip changed still has a finite interval; confidence 0 gives the measured drop."""
    two_lost = paired_difference(2, 0, 56, 0.95)
    assert two_lost.drop == pytest.approx(2 / 56) and two_lost.lower < 0 < two_lost.upper
    none_changed = paired_difference(0, 0, 56, 0.95)
    assert none_changed.lower == pytest.approx(-none_changed.upper) and 0 < none_changed.upper < 0.1
    measured = paired_difference(3, 1, 56, 0)
    assert measured.lower == pytest.approx(2 / 56) == pytest.approx(measured.upper)
    with pytest.raises(ValueError, match="do not fit"):
        paired_difference(40, 20, 56, 0.95)
