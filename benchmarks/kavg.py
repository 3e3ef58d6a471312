"""K-step averaging against all-reduce at equal epochs: accuracy, all-reduce rounds, time.

    python benchmarks/kavg.py [--data PREPARED] [--epochs 10] [--config NAME:SETTINGS ...]

Trains the built-in `synthetic-flow` recipe on two real worker processes on this machine
(`actrec launch -n 2`), once per configuration, one after another, and evaluates each run's
final weights on the synthetic test split (centre view). Prints, for each: the test top-1,
the all-reduce rounds of training and the wall time, and the ratios to the first
configuration (all-reduce). Without --data it generates and prepares the synthetic set in a
temporary folder first. A configuration is NAME:SETTING[,SETTING...] of `--set` values, e.g.
`"kavg K=4:train.sync=kavg,train.kavg_steps=4"`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from synthetic_set import prepared_synthetic_set  # benchmarks/synthetic_set.py

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

CONFIGS = {
    "allreduce": [],
    "kavg K=4": ["train.sync=kavg", "train.kavg_steps=4"],
    "kavg K=8": ["train.sync=kavg", "train.kavg_steps=8"],
}


def parsed_configs(values: list[str]) -> dict[str, list[str]]:
    configs = {}
    for value in values:
        name, _, settings = value.partition(":")
        configs[name] = [s for s in settings.split(",") if s]
    return configs


def trained_and_evaluated(prepared: Path, run_dir: Path, settings: list[str], epochs: int):
    """(test top-1, all-reduce rounds, wall seconds of the 2-worker training)."""
    from actrec.cluster.launch import launch_local_workers
    from actrec.evaluation.evaluate import evaluate_run
    from actrec.evaluation.protocols import resolve_protocol

    command = [sys.executable, "-m", "actrec_cli.main", "train", "--recipe", "synthetic-flow"]
    command += ["--data", str(prepared), "--workdir", str(run_dir)]
    for setting in [f"train.epochs={epochs}", "runtime.validate_every_epochs=0", *settings]:
        command += ["--set", setting]
    started = time.monotonic()
    with open(run_dir.parent / f"{run_dir.name}.log", "w") as log:
        code = launch_local_workers(2, command, timeout=3600, output=log)
    seconds = time.monotonic() - started
    if code != 0:
        raise SystemExit(f"{run_dir.name}: the workers failed (exit {code}); see its .log")
    record = json.loads((run_dir / "run.json").read_text())
    evaluation = evaluate_run(run_dir, resolve_protocol("centre"), out_dir=run_dir / "eval-bench")
    return evaluation.metrics.top1, int(record["all_reduces"]), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="a prepared synthetic set (default: make one)")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--config", action="append", default=[], metavar="NAME:SETTINGS")
    parser.add_argument("--out", type=Path, help="folder for the runs (default: temporary)")
    args = parser.parse_args()
    configs = parsed_configs(args.config) if args.config else CONFIGS
    out = args.out or Path(tempfile.mkdtemp(prefix="actrec-kavg-"))
    out.mkdir(parents=True, exist_ok=True)
    prepared = args.data
    if prepared is None:
        prepared = prepared_synthetic_set(out)
    rows = []
    for name, settings in configs.items():
        run_dir = out / name.replace(" ", "-").replace("=", "")
        top1, rounds, seconds = trained_and_evaluated(prepared, run_dir, settings, args.epochs)
        rows.append((name, top1, rounds, seconds))
        shown = f"{name}: top-1 {100 * top1:.1f} %, {rounds} all-reduces, {seconds:.0f} s"
        print(shown, flush=True)
    base = rows[0]
    print(f"\nsynthetic-flow, 2 workers, {args.epochs} epochs, test split (centre view)")
    print(f"{'configuration':<28} {'top-1':>7} {'vs first':>9} {'all-reduces':>12} {'time':>7}")
    for name, top1, rounds, seconds in rows:
        print(
            f"{name:<28} {100 * top1:6.1f}% {100 * (top1 - base[1]):+8.1f}p "
            f"{rounds:>6} ({rounds / base[2]:.2f}x) {seconds:5.0f} s"
        )


if __name__ == "__main__":
    main()
