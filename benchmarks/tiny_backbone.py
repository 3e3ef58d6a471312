"""How long the test suite's one-step training takes on MobileNetV2, MobileNetV3-Small and
the test network `test_mobilenet_v2` (four MobileNetV2 blocks: what the tests' tiny runs use,
issue 37).

    python benchmarks/tiny_backbone.py [--rounds 2]

Prepares the tiny synthetic set in a temporary folder, then trains `synthetic-rgb` with the
test suite's tiny settings (32 px, 2 segments, one step) on each network in turn, `--rounds`
times, in one process after a warm-up training, and prints the median seconds of `train()`
for each and the ratio to MobileNetV2.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")  # as the test suite's processes run

sys.path.insert(0, str(Path(__file__).resolve().parent))
from optimizer_trace import TESTS, prepared_tiny_set, seconds_to_train  # the same tiny set


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="trainings on each network")
    arguments = parser.parse_args()
    from actrec.config.files import load_recipe
    from actrec.config.overrides import apply_overrides
    from actrec.train.run import train

    sys.path.insert(0, str(TESTS))
    from tiny_recipe import TINY_RUN_SETTINGS  # the test suite's tiny runs

    settings = [s for s in TINY_RUN_SETTINGS if not s.startswith("model.backbone=")]
    networks = ("mobilenet_v2", "mobilenet_v3_small", "test_mobilenet_v2")
    seconds: dict[str, list[float]] = {name: [] for name in networks}
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        prepared = prepared_tiny_set(root)
        warm_up = apply_overrides(load_recipe("synthetic-rgb"), TINY_RUN_SETTINGS)
        train(warm_up, prepared, root / "warm-up")
        for name in networks:
            recipe = apply_overrides(
                load_recipe("synthetic-rgb"), [*settings, f"model.backbone={name}"]
            )
            for index in range(arguments.rounds):
                seconds[name].append(seconds_to_train(recipe, prepared, root / f"run-{index}"))
                print(f"{name}, training {index}: {seconds[name][-1]:.2f} s")
    median = {name: statistics.median(times) for name, times in seconds.items()}
    print(f"one-step training, median of {arguments.rounds}:")
    for name in networks:
        ratio = median["mobilenet_v2"] / median[name]
        print(f"  {name}: {median[name]:.2f} s ({ratio:.2f}x MobileNetV2's speed)")


if __name__ == "__main__":
    sys.exit(main())
