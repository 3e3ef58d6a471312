"""`actrec export` at an earlier commit and at this checkout, in fresh processes, in turn:
the seconds of the same export of the same runs.

    python benchmarks/export_versions.py RUN [RUN] [--baseline 9d86c83] [--rounds 3]
                                         [--streaming] [--data PREPARED]

Two runs export as one two-stream SavedModel (`--fuse`), one run as a clip SavedModel, or,
with --streaming, as its streaming SavedModel (an online TSM, a causal MoViNet). Each round
runs the baseline's command (its own `actrec` and `actrec_cli` first on PYTHONPATH, in a
temporary git worktree: benchmarks/versions.py) and then this checkout's, each into a new
folder, and reads the process's wall and CPU seconds (import included: what a user waits
for); the medians over the rounds and their ratio are printed. Run it on an idle machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from versions import ROOT, baseline_checkout


def export_command(
    runs: list[Path], out: Path, streaming: bool, data: Path | None = None
) -> list[str]:
    """The `actrec export` argv (through `python -m actrec_cli.main`) of `runs` into `out`."""
    command = [sys.executable, "-m", "actrec_cli.main", "export", str(runs[0])]
    command += ["--fuse", str(runs[1])] if len(runs) > 1 else []
    command += ["--data", str(data)] if data else []
    return command + ["--out", str(out)] + (["--streaming"] if streaming else [])


def timed_export(command: list[str], python_path: str | None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of `command` in a fresh process; SystemExit with its
    output when it fails."""
    environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    if python_path:
        environment["PYTHONPATH"] = python_path
    else:
        environment.pop("PYTHONPATH", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(command, env=environment, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{result.stdout}{result.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="one or two run folders")
    parser.add_argument("--baseline", default="9d86c83", help="the earlier commit")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--streaming", action="store_true", help="a streaming export")
    parser.add_argument(
        "--data", type=Path, help="the prepared data, where it moved since the runs trained"
    )
    args = parser.parse_args()
    if len(args.runs) > 2:
        parser.error("give one or two runs")
    runs = [path.resolve() for path in args.runs]
    times: dict[str, list[tuple[float, float]]] = {args.baseline: [], "this checkout": []}
    with (
        baseline_checkout(args.baseline) as (_, python_path),
        tempfile.TemporaryDirectory(prefix="actrec-export-versions-") as scratch,
    ):
        for round_index in range(args.rounds):
            for label, path in ((args.baseline, python_path), ("this checkout", None)):
                out = Path(scratch) / f"{label.replace(' ', '-')}-{round_index}"
                command = export_command(runs, out, args.streaming, args.data)
                times[label].append(timed_export(command, path))
                wall, cpu = times[label][-1]
                print(f"round {round_index + 1}, {label}: {wall:.2f} s wall, {cpu:.2f} s CPU")
    medians = {
        label: (statistics.median(w for w, _ in rows), statistics.median(c for _, c in rows))
        for label, rows in times.items()
    }
    for label, (wall, cpu) in medians.items():
        print(f"{label}: median {wall:.2f} s wall, {cpu:.2f} s CPU")
    (old_wall, old_cpu), (new_wall, new_cpu) = medians.values()
    print(f"ratio (this checkout / {args.baseline}): wall {new_wall / old_wall:.2f}, "
          f"CPU {new_cpu / old_cpu:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
