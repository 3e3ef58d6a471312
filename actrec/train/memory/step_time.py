"""The step-time model t(b) = a + c b fitted to the probes (Theil-Sen) and the batches it
ranks by throughput."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from actrec.errors import ConfigError
from actrec.train.memory.probe import ProbeResult

THROUGHPUT_TOLERANCE = 0.10
"""The largest batch within this fraction of the best clips/s is chosen."""
SLOWDOWN_FACTOR = 1.25
"""A batch more than this much slower than the step-time model is reported as slow."""


def _line(points: list[tuple[int, float]]) -> tuple[float, float]:
    """(a, c) of the line t = a + c b through `points` (batch, seconds): Theil-Sen (the
    median of the pairwise slopes, then the median intercept), which one batch slowed down
    by memory pressure does not bend; through the origin when all points share one batch."""
    slopes = [
        (t2 - t1) / (b2 - b1)
        for index, (b1, t1) in enumerate(points)
        for b2, t2 in points[index + 1 :]
        if b2 != b1
    ]
    if not slopes:
        return 0.0, statistics.median(t for _, t in points) / points[0][0]
    slope = statistics.median(slopes)
    return statistics.median(t - slope * b for b, t in points), slope


@dataclass(frozen=True)
class StepTimeModel:
    """t(b) = overhead_seconds + seconds_per_clip * b, fitted robustly (Theil-Sen).

    slower_than_modelled: batches that ran more than SLOWDOWN_FACTOR times slower than the
    model predicts (memory pressure near the limit, slower algorithms).
    """

    overhead_seconds: float
    seconds_per_clip: float
    slower_than_modelled: tuple[int, ...] = ()

    @classmethod
    def fit(cls, probes) -> StepTimeModel:
        """The model of the probes that fit (one batch: a line through the origin)."""
        points = [(p.batch, p.step_seconds) for p in probes if p.fits and p.step_seconds]
        if not points:
            raise ConfigError("no probed batch fits: there is nothing to fit a step time to")
        overhead, per_clip = _line(points)
        slow = tuple(
            batch
            for batch, seconds in points
            if seconds > SLOWDOWN_FACTOR * max(overhead + per_clip * batch, 1e-12)
        )
        return cls(overhead, per_clip, slow)

    def step_seconds(self, batch: int) -> float:
        return self.overhead_seconds + self.seconds_per_clip * batch

    def describe(self) -> str:
        """'43.6 ms + 8.26 ms x batch'."""
        sign = "+" if self.seconds_per_clip >= 0 else "-"
        return (
            f"{1000 * self.overhead_seconds:.1f} ms {sign} "
            f"{1000 * abs(self.seconds_per_clip):.2f} ms x batch"
        )


def throughput(probe: ProbeResult, model: StepTimeModel) -> float:
    """Clips/s credited to a probe that fits: b / max(measured, modelled step time)."""
    modelled = model.step_seconds(probe.batch)
    return probe.batch / max(probe.step_seconds or 0.0, modelled, 1e-12)


def ranked_batches(
    probes, model: StepTimeModel, tolerance: float = THROUGHPUT_TOLERANCE
) -> list[int]:
    """Batches that fit, best first: the largest within `tolerance` of the best throughput,
    then the next largest of those, then the rest by throughput."""
    fitting = [p for p in probes if p.fits and p.step_seconds]
    if not fitting:
        return []
    scores = {p.batch: throughput(p, model) for p in fitting}
    best = max(scores.values())
    near = sorted((b for b, s in scores.items() if s >= (1 - tolerance) * best), reverse=True)
    rest = sorted((b for b in scores if b not in near), key=lambda b: -scores[b])
    return near + rest
