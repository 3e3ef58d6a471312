"""Plain RGB TSMs against the same recipes distilled from a flow teacher (MARS,
`actrec train --distill-from`): test top-1, the rotation direction, the teacher's step cost.

    python benchmarks/distill.py [--data PREPARED] [--out DIR] [--seeds 0 1 2 3 4]
        [--recipes synthetic-tsm synthetic-tsm-online] [--teacher FLOW_RUN]
        [--set SECTION.KEY=VALUE ...]  (applied to the distilled runs only)
        [--set-all SECTION.KEY=VALUE ...]  (applied to the plain and distilled runs)
        [--no-plain]

Trains the teacher (`synthetic-flow`, seed 0) once unless --teacher is given, then for
every recipe and seed the plain run and the distilled run (the recipe's `-mars` twin, e.g.
`synthetic-tsm-mars`, from that teacher), each in a fresh process, one after another, the
same epochs, and evaluates each run's final weights on the test split
(centre view). Prints a row per run: test top-1, the rotation videos right, the mean
probability of the true rotation direction between the two directions (0.5: not learned;
benchmarks/tsm_seeds.py), and the median training throughput (clips/s from metrics.jsonl);
then per recipe and kind the mean and lowest top-1 and the distilled run's step cost
against the plain one's (the ratio of the median throughputs, measured in the same
benchmark run). Without --data it generates and prepares the synthetic set. Long: tens of
trainings; run it alone.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from synthetic_set import prepared_synthetic_set  # benchmarks/synthetic_set.py
from tsm_seeds import rotation_figures  # benchmarks/tsm_seeds.py

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def trained(recipe: str, prepared: Path, run_dir: Path, settings: list[str], teacher=None):
    """Train `recipe` into run_dir in a fresh process (skipped when it already finished)."""
    if (run_dir / "final.weights.h5").is_file():
        return run_dir
    command = [sys.executable, "-m", "actrec_cli.main", "train", "--recipe", recipe]
    command += ["--data", str(prepared), "--workdir", str(run_dir)]
    if teacher is not None:
        command += ["--distill-from", str(teacher)]
    for setting in settings:
        command += ["--set", setting]
    with open(run_dir.parent / f"{run_dir.name}.log", "w") as log:
        if subprocess.run(command, stdout=log, stderr=subprocess.STDOUT).returncode != 0:
            raise SystemExit(f"{run_dir.name}: the training failed; see its .log")
    return run_dir


def figures(run_dir: Path) -> dict:
    """Test top-1, rotation figures and the median training throughput of a finished run."""
    from actrec.evaluation.evaluate import evaluate_run
    from actrec.evaluation.protocols import resolve_protocol

    evaluation = evaluate_run(run_dir, resolve_protocol("centre"), out_dir=run_dir / "eval")
    right, count, direction = rotation_figures(evaluation)
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    throughput = [row["clips_per_second"] for row in rows if row["event"] == "train"]
    return {
        "top1": evaluation.metrics.top1,
        "rotations": f"{right}/{count}",
        "direction": direction,
        "clips_per_second": float(np.median(throughput[1:] or throughput)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="a prepared synthetic set (default: make one)")
    parser.add_argument("--out", type=Path, help="folder for the runs (default: temporary)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--recipes", nargs="+", default=["synthetic-tsm", "synthetic-tsm-online"])
    parser.add_argument("--teacher", type=Path, help="a finished flow run (default: train one)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    parser.add_argument(
        "--set-all", action="append", default=[], metavar="SECTION.KEY=VALUE",
        help="a setting of both kinds of run (plain and distilled): the same epochs, sampling...",
    )  # fmt: skip
    parser.add_argument("--no-plain", action="store_true", help="distilled runs only")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="actrec-distill-"))
    out.mkdir(parents=True, exist_ok=True)
    prepared = args.data or prepared_synthetic_set(out)
    teacher = args.teacher or trained("synthetic-flow", prepared, out / "teacher", [])
    tag, common = ("-".join(s.replace("=", "_") for s in sets) for sets in (args.set, args.set_all))
    print(f"teacher {teacher}; distilled with {args.set or 'the recipe defaults'}; runs in {out}")
    if args.set_all:
        print(f"both kinds with {args.set_all}")
    print("| recipe | kind | seed | test top-1 | rotations right | true direction | clips/s |")
    print("|---|---|---|---|---|---|---|")
    results: dict[tuple[str, str], list[dict]] = {}
    for recipe in args.recipes:
        kinds = [("distilled", [*args.set_all, *args.set], teacher)]
        if not args.no_plain:
            kinds.insert(0, ("plain", args.set_all, None))
        for seed in args.seeds:
            for kind, settings, source in kinds:
                name = f"{recipe}-{kind}{'-' + tag if tag and source else ''}"
                name += f"{'-' + common if common else ''}-{seed}"
                trained_recipe = f"{recipe}-mars" if source else recipe  # its distilled twin
                run = trained(trained_recipe, prepared, out / name,
                              [f"runtime.seed={seed}", *settings], source)  # fmt: skip
                row = figures(run)
                results.setdefault((recipe, kind), []).append(row)
                print(
                    f"| {recipe} | {kind} | {seed} | {100 * row['top1']:.1f} % | "
                    f"{row['rotations']} | {row['direction']:.2f} | "
                    f"{row['clips_per_second']:.0f} |",
                    flush=True,
                )
    print("\n| recipe | kind | mean top-1 | lowest | mean true direction | step cost |")
    print("|---|---|---|---|---|---|")
    for (recipe, kind), rows in results.items():
        top1 = [row["top1"] for row in rows]
        speed = np.median([row["clips_per_second"] for row in rows])
        plain = results.get((recipe, "plain"))
        cost = "1.00x"
        if kind == "distilled" and plain:
            cost = f"{np.median([row['clips_per_second'] for row in plain]) / speed:.2f}x"
        print(
            f"| {recipe} | {kind} | {100 * np.mean(top1):.1f} % | {100 * min(top1):.1f} % | "
            f"{np.mean([row['direction'] for row in rows]):.2f} | {cost} |"
        )


if __name__ == "__main__":
    main()
