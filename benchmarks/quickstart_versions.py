"""The README's first command, `actrec quickstart`, at an earlier commit and at this
checkout, one after the other on this machine: what the ratio makes of the earlier
version's time on the other CPU kind.

    python benchmarks/quickstart_versions.py [--baseline f723ea9] [--baseline-seconds 457]
                                             [--rounds 1]

f723ea9's quickstart took 457 s on a 2-core AMD EPYC without AVX-512 (issue 54, measured
there), and the quickstart must stay within its promised 5 minutes on that kind. Each round
runs the baseline's quickstart (its own `actrec` and `actrec_cli` first on PYTHONPATH) and
then this checkout's, each in a fresh work folder and a fresh process, and prints both wall
times, their test accuracies and the ratio; the estimate uses the median ratio. About
6 minutes a round on an AMD EPYC with AVX-512; run it alone on the idle machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from versions import ROOT, baseline_checkout

# The console script's function: `run` now, `main` in f723ea9's pyproject.toml.
QUICKSTART = "import actrec_cli.main as cli; (getattr(cli, 'run', None) or cli.main)()"


def timed_quickstart(checkout: Path, python_path: str | None) -> tuple[float, list[str]]:
    """(wall seconds, the lines that report test accuracy) of `actrec quickstart` in a fresh
    work folder, run from `checkout` with `python_path` first on PYTHONPATH when given."""
    environment = dict(os.environ, COLUMNS="200")
    if python_path:
        environment["PYTHONPATH"] = python_path
    with tempfile.TemporaryDirectory(prefix="actrec-quickstart-") as workdir:
        start = time.perf_counter()
        result = subprocess.run(
            [sys.executable, "-c", QUICKSTART, "quickstart", "--workdir", workdir],
            cwd=checkout, env=environment, capture_output=True, text=True,
        )  # fmt: skip
        seconds = time.perf_counter() - start
    if result.returncode != 0:
        output = result.stdout[-2000:] + result.stderr[-2000:]
        sys.exit(f"the quickstart in {checkout} failed:\n{output}")
    scores = [line.strip() for line in result.stdout.splitlines() if "%" in line]
    return seconds, scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="f723ea9", help="the earlier commit")
    parser.add_argument(
        "--baseline-seconds", type=float, default=457.0,
        help="the baseline's quickstart on the other CPU kind (f723ea9: 457 s without AVX-512)",
    )  # fmt: skip
    parser.add_argument("--rounds", type=int, default=1, help="baseline-then-this pairs")
    args = parser.parse_args()
    ratios = []
    with baseline_checkout(args.baseline) as (worktree, python_path):
        for round_index in range(args.rounds):
            old, old_scores = timed_quickstart(worktree, python_path)
            new, new_scores = timed_quickstart(ROOT, None)
            ratios.append(new / old)
            print(f"round {round_index + 1}: {args.baseline} {old:.1f} s, this checkout "
                  f"{new:.1f} s, ratio {new / old:.3f}", flush=True)  # fmt: skip
            for label, scores in ((args.baseline, old_scores), ("this checkout", new_scores)):
                print(f"  {label}: " + " | ".join(scores[-6:]))
    ratio = statistics.median(ratios)
    print(f"median ratio {ratio:.3f}: {args.baseline_seconds:.0f} s there -> about "
          f"{args.baseline_seconds * ratio:.0f} s for this checkout")  # fmt: skip


if __name__ == "__main__":
    main()
