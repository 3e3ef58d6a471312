"""Resume cost: time to the first trained step when resuming at 90 % of a long batch phase,
divided by the same for a run starting at step 0 (goal: <= 1.2).

    python benchmarks/resume.py [--steps 2000] [--repeats 3]

Prepares a small synthetic set (at 340x256, the size real datasets are prepared at) in a
temporary folder and trains a tiny recipe whose single batch phase lasts --steps steps,
stopping at 90 % of it. Then, each in a fresh process (so both pay the same start-up), from
the process's first line to the end of its first trained step:

    step 0   a new run;
    resumed  `--resume` of a copy of the stopped run (its pipeline starts at example
             0.9 * steps * batch without reading or decoding the clips before it).

It also times drawing the phase's first 90 % of batches from the input pipeline, which is
what resuming cost before (the run replayed them): "replay" = (step 0 + that) / step 0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STARTED = time.perf_counter()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

BATCH = 8
TINY = [
    "model.backbone=mobilenet_v3_small",
    "data.crop_size=32",
    "data.num_segments=3",
    f"train.batch_size={BATCH}",
    "train.epochs=1",
    "runtime.validate_every_epochs=0",
    "runtime.checkpoint_every_steps=0",
]


def recipe(steps: int):
    from actrec.config.files import load_recipe
    from actrec.config.overrides import apply_overrides

    return apply_overrides(
        load_recipe("synthetic-rgb"), [*TINY, f"runtime.steps_per_epoch={steps}"]
    )


class FirstStep:
    """Progress that notes when the first trained step ends (advance with clips)."""

    seconds = None

    def start(self, description, total):
        pass

    def advance(self, amount=1, **counters):
        if "clips" in counters and self.seconds is None:
            self.seconds = time.perf_counter() - STARTED

    def show(self, **values):
        pass

    def message(self, text):
        pass

    def finish(self):
        pass


def worker(arguments) -> None:
    """One measurement, in this fresh process: seconds to the end of the first step."""
    from actrec.train.run import train

    progress = FirstStep()
    resume = "latest" if arguments.resume else None
    train(
        recipe(arguments.steps),
        arguments.data,
        arguments.run,
        resume=resume,
        progress=progress,
        stop_after_steps=1,
    )
    print(json.dumps({"seconds": progress.seconds}))


def measured(data: Path, run: Path, steps: int, resume: bool) -> float:
    command = [sys.executable, __file__, "--worker", "--data", str(data), "--run", str(run)]
    command += ["--steps", str(steps)] + (["--resume"] if resume else [])
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])["seconds"]


def replay_seconds(data: Path, steps: int) -> float:
    """Wall seconds to draw `steps` training batches from the pipeline (the old resume)."""
    from actrec.data.input.clip_spec import clip_spec
    from actrec.data.input.pipeline import build_dataset

    spec = clip_spec(recipe(steps), training=True)
    batches = iter(build_dataset(data, "train", spec, BATCH, True, seed=0, repeat=True))
    started = time.perf_counter()
    for _ in range(steps):
        next(batches)
    return time.perf_counter() - started


def prepare(folder: Path) -> Path:
    from actrec.data.prepare.dataset import prepare_dataset
    from actrec.data.prepare.encode_video import PrepareSettings
    from actrec.data.sources import list_videos
    from actrec.data.synthetic.config import SyntheticConfig
    from actrec.data.synthetic.dataset import generate_synthetic_dataset

    generate_synthetic_dataset(folder / "raw", SyntheticConfig(videos_per_class=6, num_frames=24))
    out = folder / "prepared"
    prepare_dataset(
        list_videos("synthetic", folder / "raw"),
        out,
        PrepareSettings(frame_size="340x256", flow="none"),
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="steps of the batch phase")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--resume", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--run", type=Path, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.worker:
        worker(arguments)
        return
    from actrec.train.run import train

    stop = arguments.steps * 9 // 10
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        data = prepare(folder)
        print(f"training {stop} of {arguments.steps} steps (batch {BATCH}) to resume from ...")
        train(recipe(arguments.steps), data, folder / "stopped", stop_after_steps=stop)
        fresh, resumed = [], []
        for repeat in range(arguments.repeats):
            fresh.append(measured(data, folder / f"new-{repeat}", arguments.steps, False))
            copy = folder / f"resumed-{repeat}"
            shutil.copytree(folder / "stopped", copy)
            resumed.append(measured(data, copy, arguments.steps, True))
        replay = replay_seconds(data, stop)
    step0, late = statistics.median(fresh), statistics.median(resumed)
    print(f"seconds from process start to the first trained step (median of {arguments.repeats}):")
    print(f"  step 0: {step0:.1f}   resumed at step {stop} of {arguments.steps}: {late:.1f}")
    print(f"resume ratio (resumed / step 0): {late / step0:.2f}   (goal <= 1.2)")
    print(
        f"replaying the {stop} batches instead (the old resume) takes {replay:.1f} s more: "
        f"ratio {(step0 + replay) / step0:.2f}"
    )


if __name__ == "__main__":
    main()
