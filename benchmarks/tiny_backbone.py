"""How long the test suite's one-step training takes on MobileNetV2 (what the tiny runs use),
MobileNetV3-Small, and a network of two inverted residual blocks (what a test backbone could
be: issue 37).

    python benchmarks/tiny_backbone.py [--rounds 2]

Prepares the tiny synthetic set in a temporary folder, then trains `synthetic-rgb` with the
test suite's tiny settings (32 px, 2 segments, one step) on each network in turn, `--rounds`
times, in one process after a warm-up training, and prints the median seconds of `train()`
for each and the ratio to MobileNetV2. The two-block network is not a registered backbone:
this script builds it with Keras layers and, in this process only, puts it in the place of
the `mobilenet_v3_small` entry (run after the real MobileNetV3-Small's trainings), so
every other part of the training is actrec's own.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")  # as the test suite's processes run

sys.path.insert(0, str(Path(__file__).resolve().parent))
from optimizer_trace import TESTS, prepared_tiny_set  # the same tiny set


def two_block_network(include_top=False, weights=None, input_shape=None, pooling="avg"):
    """[N, H, W, C] -> [N, 64]: a stride-2 stem, two inverted residual blocks (expand 1x1,
    depthwise 3x3, project 1x1, BatchNorm, ReLU6: MobileNetV2's block), a 1x1 head and
    global average pooling; the keras.applications signature."""
    import keras
    from keras import layers

    def convolution(x, filters, kernel, strides=1, activation=True):
        x = layers.Conv2D(filters, kernel, strides=strides, padding="same", use_bias=False)(x)
        x = layers.BatchNormalization()(x)
        return layers.ReLU(6.0)(x) if activation else x

    inputs = keras.Input(input_shape)
    x = convolution(inputs, 16, 3, strides=2)
    for _ in range(2):
        y = convolution(x, 32, 1)
        y = layers.ReLU(6.0)(
            layers.BatchNormalization()(layers.DepthwiseConv2D(3, padding="same")(y))
        )
        x = layers.Add()([x, convolution(y, 16, 1, activation=False)])
    x = convolution(x, 64, 1)
    return keras.Model(inputs, layers.GlobalAveragePooling2D()(x))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="trainings on each network")
    arguments = parser.parse_args()
    import keras

    from actrec.config import backbones
    from actrec.config.files import load_recipe
    from actrec.config.overrides import apply_overrides
    from actrec.train.run import train

    sys.path.insert(0, str(TESTS))
    from conftest import TINY_RUN_SETTINGS  # the test suite's tiny runs (needs pytest)

    settings = [s for s in TINY_RUN_SETTINGS if not s.startswith("model.backbone=")]
    networks = ("mobilenet_v2", "mobilenet_v3_small", "two blocks")
    seconds: dict[str, list[float]] = {name: [] for name in networks}
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        prepared = prepared_tiny_set(root)
        warm_up = apply_overrides(load_recipe("synthetic-rgb"), TINY_RUN_SETTINGS)
        train(warm_up, prepared, root / "warm-up")
        for name in networks:
            backbone = name
            if name == "two blocks":
                keras.applications.ActrecTwoBlocks = two_block_network
                backbones.BACKBONES["mobilenet_v3_small"] = dataclasses.replace(
                    backbones.BACKBONES["mobilenet_v2"],
                    name="mobilenet_v3_small",
                    constructor="ActrecTwoBlocks",
                    feature_width=64,
                )
                backbone = "mobilenet_v3_small"
            recipe = apply_overrides(
                load_recipe("synthetic-rgb"), [*settings, f"model.backbone={backbone}"]
            )
            for index in range(arguments.rounds):
                run_dir = root / f"run-{index}"
                start = time.perf_counter()
                train(recipe, prepared, run_dir)
                seconds[name].append(time.perf_counter() - start)
                shutil.rmtree(run_dir)
                print(f"{name}, training {index}: {seconds[name][-1]:.2f} s")
    median = {name: statistics.median(times) for name, times in seconds.items()}
    print(f"one-step training, median of {arguments.rounds}:")
    for name in networks:
        ratio = median["mobilenet_v2"] / median[name]
        print(f"  {name}: {median[name]:.2f} s ({ratio:.2f}x MobileNetV2's speed)")


if __name__ == "__main__":
    sys.exit(main())
