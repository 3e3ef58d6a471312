"""`train.class_balance` on an imbalanced synthetic set: mean class accuracy of none,
weights and sampling, same seeds.

    python benchmarks/class_balance.py [--workdir DIR] [--seed 0] [--epochs 6] [--steps 24]

Generates the synthetic motion set at the CI quickstart's size (64x48, 16 frames, faster
rotation), then prepares an imbalanced subset: the training clips per class are
TRAIN_COUNTS (20 down to 1: the largest class 20x the smallest), the test split stays
balanced (8 clips a class). Trains the `synthetic-flow` recipe (the flow TSN, which learns
this set in a few epochs on a CPU) once per setting with the same seed, evaluates each on the
test split (centre view) and prints top-1, mean class accuracy and its ratio to none's.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

SETTINGS = ("none", "weights", "sampling")
TRAIN_COUNTS = (20, 20, 20, 20, 8, 4, 2, 1)  # training clips of each of the 8 classes
VIDEOS_PER_CLASS = 28  # 8 test clips (round(28 x 0.3)) + up to 20 training clips a class


def imbalanced_raw(raw: Path, seed: int) -> None:
    """The synthetic set in `raw`, its training list cut to TRAIN_COUNTS clips a class (the
    clips left out deleted, so the folder is a consistent UCF101-style set)."""
    from actrec.data.synthetic.config import SyntheticConfig
    from actrec.data.synthetic.dataset import generate_synthetic_dataset

    config = SyntheticConfig(
        videos_per_class=VIDEOS_PER_CLASS,
        num_frames=16,
        width=64,
        height=48,
        rotation_speed=(10.0, 14.0),
        seed=seed,
    )
    generate_synthetic_dataset(raw, config)
    split_file = next(raw.rglob("trainlist01.txt"))
    kept, taken = [], {}
    for line in split_file.read_text().splitlines():
        relative, label = line.split()
        taken[label] = taken.get(label, 0) + 1
        if taken[label] <= TRAIN_COUNTS[int(label) - 1]:
            kept.append(line)
        else:
            (raw / relative).unlink()
    split_file.write_text("".join(line + "\r\n" for line in kept))


def trained_and_evaluated(setting: str, prepared: Path, run_dir: Path, args) -> dict:
    from actrec.config.files import load_recipe
    from actrec.config.overrides import apply_overrides
    from actrec.evaluation.evaluate import evaluate_run
    from actrec.evaluation.protocols import resolve_protocol
    from actrec.train.run import train

    overrides = [
        f"train.class_balance={setting}",
        f"train.epochs={args.epochs}",
        f"runtime.steps_per_epoch={args.steps}",
        "runtime.validate_every_epochs=0",
        f"runtime.seed={args.seed}",
    ]
    started = time.monotonic()
    train(apply_overrides(load_recipe("synthetic-flow"), overrides), prepared, run_dir)
    evaluation = evaluate_run(run_dir, resolve_protocol("centre"))
    metrics = evaluation.metrics
    return {
        "top1": metrics.top1,
        "mean_class": metrics.mean_class_accuracy,
        "rarest_recall": float(metrics.per_class_accuracy[len(TRAIN_COUNTS) - 1]),
        "seconds": time.monotonic() - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--steps", type=int, default=24)
    args = parser.parse_args()

    from actrec.data.prepare.dataset import prepare_dataset
    from actrec.data.prepare.encode_video import PrepareSettings
    from actrec.data.sources import list_videos

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="class-balance-"))
    raw, prepared = workdir / "raw", workdir / "prepared"
    started = time.monotonic()
    imbalanced_raw(raw, args.seed)
    prepare_dataset(list_videos("synthetic", raw), prepared, PrepareSettings(frame_size="original"))
    print(f"set: {workdir} ({time.monotonic() - started:.0f} s); train clips a class "
          f"{list(TRAIN_COUNTS)}, test 8 a class")  # fmt: skip
    results = {
        setting: trained_and_evaluated(setting, prepared, workdir / "runs" / setting, args)
        for setting in SETTINGS
    }
    base = results["none"]["mean_class"]
    print(f"\nsynthetic-flow, {args.epochs} epochs x {args.steps} steps, seed {args.seed}")
    print(f"{'setting':<10} {'top-1 %':>8} {'mean class %':>13} {'x none':>7} "
          f"{'rarest class %':>15} {'seconds':>8}")  # fmt: skip
    for setting, result in results.items():
        ratio = result["mean_class"] / base if base else float("nan")
        print(
            f"{setting:<10} {100 * result['top1']:>8.1f} {100 * result['mean_class']:>13.1f} "
            f"{ratio:>7.2f} {100 * result['rarest_recall']:>15.1f} {result['seconds']:>8.0f}"
        )


if __name__ == "__main__":
    main()
