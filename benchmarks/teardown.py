"""How long `train()` takes to return after its run is written, with another TensorFlow
process training beside it (as the test suite's two pytest-xdist workers do).

    python benchmarks/teardown.py [--epochs 2] [--rounds 2]

Prepares the synthetic set in a temporary folder, then starts two processes that each
train the quickstart's RGB TSM (`synthetic-tsm`, `--epochs` epochs of 32 steps, no
validation) `--rounds` times in a row with the library's `train()`. Each prints, per
training, the seconds `train()` took and the seconds between the run's last write
(run.json) and its return: the time spent tearing down the input pipeline.

Measured on a 2-core AMD EPYC (docs/benchmarks.md, "The test suite's time"): some
trainings waited 5-20 s (3 of 10 in two runs with a second process; 50-55 s in 2 of 6 lone
16-epoch ones), the main thread idle in the destructor of the host pipeline's RootDataset
iterator, joining tf.data's autotuning thread. `train()` now drops the iterator on a thread
of its own (actrec.train.inputs.input_pipelines.drop_in_background): `--epochs 2 --rounds 2`
printed 0.0 s for all four trainings.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from synthetic_set import prepared_synthetic_set  # benchmarks/synthetic_set.py


def train_rounds(prepared: Path, folder: Path, epochs: int, rounds: int) -> None:
    """Train `rounds` times in this process; print each training's seconds and teardown."""
    from actrec.config.files import load_recipe
    from actrec.config.overrides import apply_overrides
    from actrec.train.run import train

    recipe = apply_overrides(
        load_recipe("synthetic-tsm"), [f"train.epochs={epochs}", "runtime.validate_every_epochs=0"]
    )
    for index in range(rounds):
        run_dir = folder / f"run-{index}"
        start = time.time()
        train(recipe, prepared, run_dir)
        end = time.time()
        teardown = end - os.path.getmtime(run_dir / "run.json")
        print(f"{folder.name} training {index}: {end - start:5.1f} s, teardown {teardown:4.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2, help="epochs of 32 steps")
    parser.add_argument("--rounds", type=int, default=2, help="trainings per process")
    parser.add_argument("--worker", nargs=2, metavar=("PREPARED", "FOLDER"), help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.worker:
        prepared, folder = (Path(path) for path in arguments.worker)
        train_rounds(prepared, folder, arguments.epochs, arguments.rounds)
        return
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        prepared = prepared_synthetic_set(root)
        processes = [
            subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    "--epochs",
                    str(arguments.epochs),
                    "--rounds",
                    str(arguments.rounds),
                    "--worker",
                    str(prepared),
                    str(root / name),
                ],
                env=environment,
            )
            for name in ("process-1", "process-2")
        ]
        codes = [process.wait() for process in processes]
    if any(codes):
        raise SystemExit(f"a process failed (exit codes {codes})")


if __name__ == "__main__":
    main()
