"""Optical flow speed per CPU core at 340x256: DIS presets against Farneback (and TV-L1).

    python benchmarks/flow.py [--seconds 2.0]

Runs every method on one thread (cv2.setNumThreads(1)) over rendered textured motion
(the synthetic classes at 340x256), prints frames/s per core, the ratio to Farneback
measured in the same run, and the mean end-point error (px) against known translations
(rendered, not encoded, so only the estimator is measured).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from actrec.data.flow import available_flow_methods, create_flow_estimator, grey
from actrec.data.synthetic import (
    SyntheticConfig,
    render_clip,
    render_translation_clip,
)

WIDTH, HEIGHT = 340, 256
TRANSLATIONS = [(2.0, 0.0), (-1.5, 3.0), (0.0, -4.0), (7.5, -6.0), (12.3, 4.1)]
BORDER = 24


def motion_pairs(num_frames: int = 13) -> list[tuple[np.ndarray, np.ndarray]]:
    """Consecutive grey frame pairs [H, W] of rendered textured motion, three classes."""
    config = SyntheticConfig(num_frames=num_frames, width=WIDTH, height=HEIGHT)
    pairs = []
    for index, class_name in enumerate(("MoveRight", "RotateClockwise", "ZoomIn")):
        frames = [
            grey(frame) for frame in render_clip(class_name, np.random.default_rng(index), config)
        ]
        pairs.extend(itertools.pairwise(frames))
    return pairs


def dis_preset_estimator(preset: int):
    dis = cv2.DISOpticalFlow_create(preset)
    return lambda previous, following: dis.calc(previous, following, None)


def estimators() -> list[tuple[str, object]]:
    methods = [
        ("dis ultrafast", dis_preset_estimator(cv2.DISOPTICAL_FLOW_PRESET_ULTRAFAST)),
        ("dis fast (actrec 'dis')", create_flow_estimator("dis")),
        ("dis medium", dis_preset_estimator(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM)),
        ("farneback (actrec)", create_flow_estimator("farneback")),
    ]
    if "tvl1" in available_flow_methods():
        methods.append(("tvl1 (actrec)", create_flow_estimator("tvl1")))
    return methods


def frames_per_second(estimate, pairs, seconds: float) -> float:
    """Flow fields per second on one core, over `pairs` cycled for about `seconds`."""
    estimate(*pairs[0])  # warm-up: allocations, pyramid buffers
    count = 0
    started = time.perf_counter()
    elapsed = 0.0
    while elapsed < seconds or count < 3:
        estimate(*pairs[count % len(pairs)])
        count += 1
        elapsed = time.perf_counter() - started
    return count / elapsed


def mean_endpoint_error(estimate) -> float:
    """Mean end-point error (px) over the interior, across TRANSLATIONS."""
    errors = []
    for dx, dy in TRANSLATIONS:
        clip = render_translation_clip(dx, dy, 2, WIDTH, HEIGHT, seed=7)
        flow = estimate(grey(clip[0]), grey(clip[1]))[BORDER:-BORDER, BORDER:-BORDER]
        errors.append(np.hypot(flow[..., 0] - dx, flow[..., 1] - dy).mean())
    return float(np.mean(errors))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="timing per method")
    arguments = parser.parse_args()
    cv2.setNumThreads(1)
    pairs = motion_pairs()
    print(f"optical flow, {WIDTH}x{HEIGHT}, 1 thread, OpenCV {cv2.__version__}")
    print(f"{'method':26s} {'frames/s':>9s} {'ms/frame':>9s} {'x farneback':>12s} {'EPE px':>7s}")
    results = [
        (name, frames_per_second(estimate, pairs, arguments.seconds), mean_endpoint_error(estimate))
        for name, estimate in estimators()
    ]
    farneback_rate = next(rate for name, rate, _ in results if name.startswith("farneback"))
    for name, rate, error in results:
        print(
            f"{name:26s} {rate:9.1f} {1000 / rate:9.2f} {rate / farneback_rate:12.2f} {error:7.3f}"
        )
    dis_rate = next(rate for name, rate, _ in results if "actrec 'dis'" in name)
    print(f"ratio DIS (actrec default, FAST) / Farneback: {dis_rate / farneback_rate:.2f}")
    if "tvl1" not in available_flow_methods():
        print("tvl1: not available (needs opencv-contrib-python-headless)")


if __name__ == "__main__":
    main()
