"""How long a one-step training takes with actrec's Adam update (TensorFlow's fused
ResourceApplyAdam kernel, one op per variable, the step's scalars built once per update)
against Keras' own (ten ops per variable, built once per variable), on the same recipe and
data.

    python benchmarks/optimizer_trace.py [--rounds 3]

Prepares the tiny synthetic set (8 classes x 3 videos of 12 frames at 64x48) in a temporary
folder, then trains `synthetic-rgb` with the test suite's tiny settings on MobileNetV2 (32
px, 2 segments, one step) `--rounds` times each way, alternating, in one process, and
prints the median seconds of `train()` each way and their ratio. Nearly all of such a
training is building the step's graph and running it once: what every training pays
before its first step.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")  # as the test suite's processes run

TESTS = Path(__file__).resolve().parent.parent / "tests"


def keras_update_step(self, gradient, variable, learning_rate):
    """The update as Keras builds it: its own Adam.update_step after the multipliers."""
    import keras

    from actrec.train.loop.step import decayed_gradient_and_rate

    lr_mult, decay = self.actrec_rates.of(self._var_key(variable))
    gradient, learning_rate = decayed_gradient_and_rate(
        gradient, variable, learning_rate, lr_mult, decay
    )
    return keras.optimizers.Adam.update_step(self, gradient, variable, learning_rate)


def prepared_tiny_set(folder: Path) -> Path:
    from actrec.data.prepare.dataset import prepare_dataset
    from actrec.data.prepare.encode_video import PrepareSettings
    from actrec.data.sources import list_videos
    from actrec.data.synthetic.config import SyntheticConfig
    from actrec.data.synthetic.dataset import generate_synthetic_dataset

    generate_synthetic_dataset(
        folder / "raw", SyntheticConfig(videos_per_class=3, num_frames=12, width=64, height=48)
    )
    prepare_dataset(
        list_videos("synthetic", folder / "raw"),
        folder / "prepared",
        PrepareSettings(frame_size="original"),
        workers=1,
    )
    return folder / "prepared"


def seconds_to_train(recipe, prepared: Path, run_dir: Path) -> float:
    """Trains `recipe` on `prepared` into `run_dir`, removes the run, returns the seconds."""
    from actrec.train.run import train

    start = time.perf_counter()
    train(recipe, prepared, run_dir)
    seconds = time.perf_counter() - start
    shutil.rmtree(run_dir)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="trainings each way")
    arguments = parser.parse_args()
    import keras

    from actrec.config.files import load_recipe
    from actrec.config.overrides import apply_overrides
    from actrec.train.loop import optimizer

    adam = optimizer._actrec_optimizer_class(keras.optimizers.Adam)
    updates = {"actrec": adam.update_step, "keras": keras_update_step}
    sys.path.insert(0, str(TESTS))
    from tiny_recipe import TINY_RUN_SETTINGS  # the test suite's tiny runs

    # MobileNetV2, as measured in docs/benchmarks.md (the suite's tiny runs now use the
    # test network, whose few variables leave little for the update to save)
    recipe = apply_overrides(
        load_recipe("synthetic-rgb"), [*TINY_RUN_SETTINGS, "model.backbone=mobilenet_v2"]
    )
    seconds = {name: [] for name in updates}
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        prepared = prepared_tiny_set(root)
        try:
            for index in range(arguments.rounds):
                for name, update in updates.items():
                    adam.update_step = update
                    seconds[name].append(
                        seconds_to_train(recipe, prepared, root / f"{name}-{index}")
                    )
                    print(f"{name} update, training {index}: {seconds[name][-1]:.2f} s")
        finally:
            adam.update_step = updates["actrec"]
    median = {name: statistics.median(times) for name, times in seconds.items()}
    print(f"one-step training, median of {arguments.rounds}: Keras' Adam update "
          f"{median['keras']:.2f} s, actrec's {median['actrec']:.2f} s "
          f"({median['keras'] / median['actrec']:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
