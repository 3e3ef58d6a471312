"""A bidirectional TSM made online (`--init-from` with an online recipe): what the one-way
shift costs before and after fine-tuning, against the same online recipe from scratch.

    python benchmarks/online_from_bidirectional.py [--data PREPARED] [--out DIR]
        [--seeds 0 1 2] [--epochs 16] [--finetune-epochs 4 8] [--set SECTION.KEY=VALUE ...]

Per seed, each training in a fresh process, one after another: `synthetic-tsm` (the
bidirectional shift) for --epochs; the same weights run online with no training (the run
copied with recipe.yaml's model.shift_direction set to online: the shift holds no weights);
`synthetic-tsm-online --init-from` the bidirectional run for each of --finetune-epochs; and
`synthetic-tsm-online` from scratch for the same epochs. Every run's final weights are
evaluated on the test split (centre view). Prints a row per seed and the means; without
--data it generates and prepares the synthetic set (benchmarks/camera_motion_set.py makes
the camera-motion set from real footage: pass its DIR/prepared). Long: run it alone.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml
from synthetic_set import prepared_synthetic_set  # benchmarks/synthetic_set.py

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def trained(run_dir: Path, recipe: str, prepared: Path, settings: list[str], init_from=None):
    """Train `recipe` into run_dir in a fresh process (kept when it already finished)."""
    if (run_dir / "final.weights.h5").is_file():
        return run_dir
    command = [sys.executable, "-m", "actrec_cli.main", "train", "--recipe", recipe]
    command += ["--data", str(prepared), "--workdir", str(run_dir)]
    if init_from is not None:
        command += ["--init-from", str(init_from)]
    for setting in settings:
        command += ["--set", setting]
    with open(run_dir.parent / f"{run_dir.name}.log", "w") as log:
        if subprocess.run(command, stdout=log, stderr=subprocess.STDOUT).returncode != 0:
            raise SystemExit(f"{run_dir.name}: the training failed; see its .log")
    return run_dir


def made_online(run_dir: Path, copy: Path) -> Path:
    """A copy of the finished run whose recipe runs the same weights with the online shift."""
    if not copy.exists():
        shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("eval*", "checkpoints"))
        recipe_file = copy / "recipe.yaml"
        recipe = yaml.safe_load(recipe_file.read_text())
        recipe["model"]["shift_direction"] = "online"
        recipe_file.write_text(yaml.safe_dump(recipe, sort_keys=False))
    return copy


def test_top1(run_dir: Path) -> float:
    from actrec.evaluation.evaluate import evaluate_run
    from actrec.evaluation.protocols import resolve_protocol

    evaluation = evaluate_run(run_dir, resolve_protocol("centre"), out_dir=run_dir / "eval-test")
    return evaluation.metrics.top1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="a prepared set (default: the synthetic set)")
    parser.add_argument("--out", type=Path, help="folder for the runs (default: temporary)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=16, help="the bidirectional run's")
    parser.add_argument("--finetune-epochs", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="actrec-online-"))
    out.mkdir(parents=True, exist_ok=True)
    prepared = args.data or prepared_synthetic_set(out)
    print(f"data {prepared}; runs in {out}; settings {args.set or 'none'}", flush=True)
    columns = ["bidirectional", "online, no training"]
    for epochs in args.finetune_epochs:
        columns += [f"fine-tuned online {epochs} ep", f"online from scratch {epochs} ep"]
    print("| seed | " + " | ".join(columns) + " |", flush=True)
    rows = []
    for seed in args.seeds:
        common = [f"runtime.seed={seed}", *args.set]
        source = out / f"seed-{seed}-bidirectional"
        trained(source, "synthetic-tsm", prepared, [f"train.epochs={args.epochs}", *common])
        row = [test_top1(source), test_top1(made_online(source, out / f"seed-{seed}-as-online"))]
        for epochs in args.finetune_epochs:
            settings = [f"train.epochs={epochs}", *common]
            tuned = trained(
                out / f"seed-{seed}-tuned-{epochs}",
                "synthetic-tsm-online",
                prepared,
                settings,
                init_from=source,
            )
            scratch = trained(
                out / f"seed-{seed}-scratch-{epochs}", "synthetic-tsm-online", prepared, settings
            )
            row += [test_top1(tuned), test_top1(scratch)]
        rows.append(row)
        print(f"| {seed} | " + " | ".join(f"{100 * v:.1f} %" for v in row) + " |", flush=True)
    means = np.mean(rows, axis=0)
    print("| mean | " + " | ".join(f"{100 * v:.1f} %" for v in means) + " |")
    for index, epochs in enumerate(args.finetune_epochs):
        tuned, scratch = (np.array(rows)[:, 2 + 2 * index + k] for k in (0, 1))
        wins = int((tuned > scratch).sum())
        print(f"fine-tuned beats scratch at {epochs} epochs in {wins} of {len(rows)} seeds")


if __name__ == "__main__":
    main()
