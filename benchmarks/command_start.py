"""The start of an `actrec` command that uses TensorFlow, with and without the console
script's declined optional imports (actrec.cluster.optional_imports), in fresh processes,
alternating:

    python benchmarks/command_start.py [--rounds 5]

Each process imports TensorFlow and Keras and runs a one-layer Keras model (what every
command that trains, evaluates, exports or predicts does first), then prints its CPU
seconds; the medians of both ways and their ratio are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

_PROCESS = """
import json, os, sys
if sys.argv[1] == "declined":
    from actrec.cluster.optional_imports import decline_optional_imports
    decline_optional_imports()
import keras, tensorflow as tf
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
model(tf.ones((1, 3)))
times = os.times()
print(json.dumps({"cpu": times.user + times.system}))
"""


def process_seconds(way: str) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one fresh process started `way`."""
    started = time.perf_counter()
    finished = subprocess.run(
        [sys.executable, "-c", _PROCESS, way], capture_output=True, text=True, check=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )  # fmt: skip
    wall = time.perf_counter() - started
    return json.loads(finished.stdout.strip().splitlines()[-1])["cpu"], wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    measured = {"all imports": [], "declined": []}
    for _ in range(args.rounds):
        for way in measured:
            measured[way].append(process_seconds(way))
    medians = {}
    for way, runs in measured.items():
        cpu = statistics.median(run[0] for run in runs)
        wall = statistics.median(run[1] for run in runs)
        medians[way] = (cpu, wall)
        print(f"{way}: {cpu:.2f} s CPU, {wall:.2f} s wall (median of {args.rounds})")
    (cpu, wall), (declined_cpu, declined_wall) = medians["all imports"], medians["declined"]
    print(f"declined: {cpu / declined_cpu:.2f}x less CPU, {wall / declined_wall:.2f}x less wall")


if __name__ == "__main__":
    main()
