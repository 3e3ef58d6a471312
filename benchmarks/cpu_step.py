"""A training step on the CPU: what feeding one CPU replica a local dataset and one thread
an op gain on the quickstart's networks.

    python benchmarks/cpu_step.py [--steps 48]

Prepares the synthetic set in a temporary folder, then for each recipe (synthetic-flow,
synthetic-tsm) builds actrec's trainer (actrec.train.loop.trainer.build_trainer, on the
strategy `actrec train` builds) and times its training step in a fresh process for each
feed and thread setting (a live iterator prefetches in the background: two in one process
would share their cost). The feeds:
1. "distributed": `strategy.distribute_datasets_from_function`, what every run used before;
2. "local": `trainer.distribute`, which hands a process's one CPU replica its dataset as it is.
Thread settings: TensorFlow's default (a thread a core for each op) and 1
(runtime.threads_per_op, the synthetic recipes' value). Prints milliseconds per step and
each row's speed relative to the first (distributed, TensorFlow's threads); all in one run
on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from synthetic_set import prepared_synthetic_set  # benchmarks/synthetic_set.py

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

RECIPES = ("synthetic-flow", "synthetic-tsm")
THREADS = {"TensorFlow's (one a core)": None, "1 (threads_per_op)": 1}
FEEDS = ("distributed", "local")


def _milliseconds_per_step(
    recipe_name: str, prepared: Path, feed: str, threads: int | None, steps: int
) -> float:
    """In this process: the mean milliseconds of `steps` training steps fed by `feed`."""
    import tensorflow as tf

    if threads is not None:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
    from actrec.cluster.strategy import build_strategy
    from actrec.config.files import load_recipe
    from actrec.data.input.pipeline import batch_finisher
    from actrec.train.inputs.input_pipelines import training_dataset
    from actrec.train.inputs.training_data import check_training_data
    from actrec.train.loop.trainer import build_trainer

    recipe = load_recipe(recipe_name)
    data = check_training_data(recipe, prepared)
    strategy = build_strategy()
    trainer = build_trainer(
        strategy, recipe, data.info.num_classes, batch_finisher(data.train_spec)
    )
    dataset = training_dataset(prepared, recipe, data, 0, recipe.train.batch_size, 0)
    if feed == "distributed":
        batches = iter(strategy.distribute_datasets_from_function(dataset))
    else:
        batches = iter(trainer.distribute(dataset))
    for _ in range(5):  # the trace and warm-up, not timed
        trainer.train_step(next(batches), recipe.train.lr)
    start = time.perf_counter()
    for _ in range(steps):
        trainer.train_step(next(batches), recipe.train.lr)
    return 1000 * (time.perf_counter() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=96, help="timed steps a row")
    parser.add_argument("--measure", nargs=4, help=argparse.SUPPRESS)  # recipe data feed threads
    arguments = parser.parse_args()
    if arguments.measure:
        recipe, prepared, feed, threads = arguments.measure
        threads = None if threads == "none" else int(threads)
        milliseconds = _milliseconds_per_step(
            recipe, Path(prepared), feed, threads, arguments.steps
        )
        print(json.dumps(milliseconds))
        return
    with tempfile.TemporaryDirectory() as folder:
        prepared = prepared_synthetic_set(Path(folder))
        print(f"{os.cpu_count()} CPUs, {arguments.steps} steps a row")
        environment = {**os.environ}
        environment.pop("TF_NUM_INTRAOP_THREADS", None)
        for recipe in RECIPES:
            rows = {}
            for label, threads in THREADS.items():
                for feed in FEEDS:
                    command = [
                        sys.executable, __file__, "--steps", str(arguments.steps), "--measure",
                        recipe, str(prepared), feed, "none" if threads is None else str(threads),
                    ]  # fmt: skip
                    output = subprocess.run(
                        command, env=environment, check=True, capture_output=True, text=True
                    ).stdout
                    rows[f"{feed} dataset, threads an op: {label}"] = json.loads(
                        output.splitlines()[-1]
                    )
            baseline = next(iter(rows.values()))
            print(recipe)
            for name, milliseconds in rows.items():
                print(f"  {name:52} {milliseconds:6.1f} ms/step  {baseline / milliseconds:4.2f}x")


if __name__ == "__main__":
    main()
