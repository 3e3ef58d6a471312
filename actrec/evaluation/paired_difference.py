"""A confidence interval of the difference between two classifiers' accuracies measured on
the same clips (paired), for the accuracy gate of a quantised export.

On N clips, `lost` clips are right under the first model and wrong under the second, and
`gained` the other way round; the drop in accuracy is (lost - gained) / N. Its interval is
Tango's score interval for a difference of paired proportions (Tango 1998, Statistics in
Medicine 17: 891-908; the interval Newcombe 1998 and Agresti & Min 2005 recommend for small
samples): the drops d whose score statistic

    Z(d) = (lost - gained - N d) / sqrt(N (2 q(d) + d (1 - d)))

is within the normal quantile of the confidence, q(d) being the maximum-likelihood share of
gained clips given a true drop d (the root of a quadratic, below). It stays inside [-1, 1]
and is defined at 0 changed clips, where the Wald interval collapses to a point. SciPy and
statsmodels have no paired score interval (statsmodels' mcnemar is a test of d = 0 only), so
it is written here: a closed-form constrained estimate and a bisection.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

BISECTION_STEPS = 60
"""Halvings of [-1, 1]: 2^-60, far below one clip's share of any gate."""


@dataclass(frozen=True)
class PairedDifference:
    """A paired drop (first model's accuracy - second's, as a share) with its interval.

    clips: N; lost, gained: the discordant clips (see the module); confidence: the
    interval's (0.95: the true drop is below `lower` 2.5 % of the time, above `upper` 2.5 %);
    lower, upper: its bounds."""

    clips: int
    lost: int
    gained: int
    confidence: float
    lower: float
    upper: float

    @property
    def drop(self) -> float:
        """The measured drop, a share (negative: the second model is better)."""
        return (self.lost - self.gained) / self.clips

    @property
    def resolution(self) -> float:
        """One clip's share of the drop (1 / N)."""
        return 1.0 / self.clips


def _score(lost: int, gained: int, clips: int, drop: float) -> float:
    """Tango's Z(drop) (the module's formula); +-inf where its variance is 0."""
    weight = -lost - gained + (2 * clips - lost + gained) * drop
    gained_share = (
        math.sqrt(weight * weight + 8 * clips * gained * drop * (1 - drop)) - weight
    ) / (4 * clips)
    numerator = lost - gained - clips * drop
    variance = clips * (2 * gained_share + drop * (1 - drop))
    if variance <= 0:
        return math.copysign(math.inf, numerator) if numerator else 0.0
    return numerator / math.sqrt(variance)


def _root(lost: int, gained: int, clips: int, target: float, low: float, high: float) -> float:
    """The drop in [low, high] where Z falls to `target` (Z decreases with the drop)."""
    for _ in range(BISECTION_STEPS):
        middle = (low + high) / 2
        if _score(lost, gained, clips, middle) > target:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def paired_difference(lost: int, gained: int, clips: int, confidence: float) -> PairedDifference:
    """The drop of `lost` and `gained` clips among `clips` with its interval at `confidence`
    (in [0, 1): 0 gives the measured drop as both bounds)."""
    if clips < 1 or lost < 0 or gained < 0 or lost + gained > clips:
        raise ValueError(f"{lost} lost and {gained} gained clips do not fit {clips} clips")
    if not 0 <= confidence < 1:
        raise ValueError(f"a confidence of {confidence} is not in [0, 1)")
    quantile = NormalDist().inv_cdf((1 + confidence) / 2)
    measured = (lost - gained) / clips
    return PairedDifference(
        clips=clips,
        lost=lost,
        gained=gained,
        confidence=confidence,
        lower=_root(lost, gained, clips, quantile, -1.0, measured),
        upper=_root(lost, gained, clips, -quantile, measured, 1.0),
    )
