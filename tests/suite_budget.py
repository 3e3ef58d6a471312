"""The suite's time budget, which every run's summary reports (tests/conftest.py).

The suite must finish within 25 minutes on CI's slower (AVX2-only) CPU, 10.7 minutes on one
with AVX-512 (measured: the suite takes 2.34x as long without it); the summary warns past
the budget of the CPU it ran on (a warning, not a failure: machines are noisy, and instances
of one kind differ: benchmarks/suite_versions.py measures against a version timed on both
kinds)."""

from __future__ import annotations

from pathlib import Path

SUITE_BUDGET_SECONDS = 25 * 60
AVX512_SPEEDUP = 2.34


def has_avx512() -> bool:
    """Whether this machine's CPU has AVX-512 (the flag avx512f in /proc/cpuinfo)."""
    try:
        return " avx512f" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def suite_budget_seconds(avx512: bool) -> float:
    """The suite's budget on a CPU with or without AVX-512."""
    return SUITE_BUDGET_SECONDS / AVX512_SPEEDUP if avx512 else SUITE_BUDGET_SECONDS


def budget_summary(elapsed: float, avx512: bool) -> tuple[str, str | None]:
    """(the line giving the suite's time and budget, the warning past the budget or None)."""
    budget = suite_budget_seconds(avx512)
    cpu = "with" if avx512 else "without"
    line = (
        f"actrec suite: {elapsed / 60:.1f} min (budget {budget / 60:.1f} min on a CPU {cpu} "
        "AVX-512)"
    )
    if elapsed <= budget:
        return line, None
    warning = (
        f"WARNING: the suite took {elapsed / 60:.1f} min, more than the {budget / 60:.1f} "
        f"minutes it must stay under on a CPU {cpu} AVX-512 (25 on CI's slower CPU; see "
        "the slowest tests above and docs/development.md; instances of one CPU differ: "
        "`python benchmarks/suite_versions.py` compares with a version measured on both)"
    )
    return line, warning
