"""The README's test command at an earlier commit and at this checkout, one after the other
on this machine: how much faster the suite got, measured where both ran.

    python benchmarks/suite_versions.py [--baseline 97ab109] [--baseline-minutes 41.4]
                                        [-k EXPRESSION] [--durations N] [-m MARKS]

Instances of one CPU kind differ (the same tests: 11.2 and 14.1 min on two AMD EPYCs with
AVX-512, docs/benchmarks.md), so a suite time means little beside one from another machine.
The baseline commit's suite was measured on the other CPU kind too (97ab109: 41.4 min on a
2-core AMD EPYC without AVX-512, where --baseline-minutes gives that figure); running it
here beside the current suite gives the ratio of the two on one machine, and so what the
current suite would take there. Checks the baseline out into a temporary git worktree and
runs `python -m pytest` in it, its own `actrec` and `actrec_cli` first on PYTHONPATH (so its
tests and the processes they start import it, not the installed checkout), then the same
command here. Prints each suite's wall time and pytest's summary line, their ratio and the
estimate (-k: only the tests pytest's -k selects, in both, to compare a part; --durations N:
this checkout's N slowest test phases, as pytest lists them, to know what to trim; -m: pytest's
marker expression in this checkout only, the baseline whole, e.g. -m "not recipe_scale" for
the suite without its recipe-scale tests). Long: two
whole suites (about an hour on a slow instance); run it alone on the idle machine. 97ab109's
console-script test fails here (it runs the installed script, this checkout's); 1 failed, 989 passed
on 2026-11-27.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from versions import ROOT, baseline_checkout


def timed_suite(
    checkout: Path,
    python_path: str | None,
    select: str | None,
    durations: int = 0,
    marks: str | None = None,
):
    """(wall seconds, pytest's summary line, pytest's list of the `durations` slowest phases)
    of the README's test command in `checkout`, with `-k select` and `-m marks` when given."""
    environment = dict(os.environ)
    if python_path:
        environment["PYTHONPATH"] = python_path
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        + (["-k", select] if select else [])
        + (["-m", marks] if marks else [])
        + ([f"--durations={durations}"] if durations else []),
        cwd=checkout, env=environment, capture_output=True, text=True,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    lines = [line for line in result.stdout.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    slowest = re.findall(r"^\d+\.\d+s (?:call|setup|teardown) .*$", result.stdout, re.MULTILINE)
    return seconds, lines[-1] if lines else f"exit {result.returncode}, no summary", slowest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="97ab109", help="the earlier commit")
    parser.add_argument(
        "--baseline-minutes", type=float, default=41.4,
        help="the baseline's suite measured on the other machine (97ab109: 41.4 min)",
    )  # fmt: skip
    parser.add_argument("-k", dest="select", help="pytest's -k: only these tests, in both")
    parser.add_argument(
        "--durations", type=int, default=0, help="print this checkout's N slowest test phases"
    )
    parser.add_argument(
        "-m", dest="marks",
        help="pytest's -m, in this checkout only (the baseline runs whole): what the suite "
        "would take without some tests, e.g. \"not recipe_scale\"",
    )  # fmt: skip
    args = parser.parse_args()
    with baseline_checkout(args.baseline) as (worktree, python_path):
        old, old_line, _ = timed_suite(worktree, python_path, args.select)
    print(f"{args.baseline}: {old / 60:.1f} min ({old_line})", flush=True)
    new, new_line, slowest = timed_suite(ROOT, None, args.select, args.durations, args.marks)
    print(f"this checkout: {new / 60:.1f} min ({new_line})")
    print("\n".join(slowest))
    print(f"ratio {new / old:.2f}: {args.baseline_minutes:.1f} min there -> about "
          f"{args.baseline_minutes * new / old:.1f} min for this checkout")  # fmt: skip


if __name__ == "__main__":
    main()
