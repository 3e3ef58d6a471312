"""Preparation speed: optical flow per core, and end-to-end `actrec prepare` on the synthetic set.

    python benchmarks/prepare.py [--seconds 2.0] [--videos-per-class 12]

1. Flow frames/s on one core at 340x256 for DIS (actrec's default) vs Farneback (and TV-L1
   when cv2.optflow exists), with the ratio measured in the same run (see benchmarks/flow.py).
2. End-to-end prepare (decode, JPEG, flow, shards) of the default synthetic set into a
   temporary folder: videos/s and frames/s with 1 worker and with all CPUs, and their ratio;
   RGB-only (--flow none) to show what flow costs; and frames resized to 340x256, the size
   real datasets are prepared at.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import cv2

sys.path.insert(0, str(Path(__file__).resolve().parent))

import flow as flow_benchmark  # benchmarks/flow.py

from actrec.data.encode_video import PrepareSettings
from actrec.data.flow import available_flow_methods
from actrec.data.prepare import prepare_dataset
from actrec.data.sources import list_videos
from actrec.data.synthetic import SyntheticConfig, generate_synthetic_dataset


def flow_rates(seconds: float) -> dict[str, float]:
    cv2.setNumThreads(1)
    pairs = flow_benchmark.motion_pairs()
    return {
        name: flow_benchmark.frames_per_second(estimate, pairs, seconds)
        for name, estimate in flow_benchmark.estimators()
        if not name.startswith("dis ultrafast") and not name.startswith("dis medium")
    }


def prepare_rate(
    listing, out: Path, settings: PrepareSettings, workers: int
) -> tuple[float, float]:
    """(videos/s, frames/s) of one full preparation into `out`."""
    started = time.perf_counter()
    summary = prepare_dataset(listing, out, settings, workers=workers)
    elapsed = time.perf_counter() - started
    videos = sum(summary.prepared.values())
    frames = sum(summary.frames_by_split.values())
    return videos / elapsed, frames / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="flow timing per method")
    parser.add_argument("--videos-per-class", type=int, default=12)
    arguments = parser.parse_args()

    rates = flow_rates(arguments.seconds)
    print("optical flow at 340x256, one core (frames/s):")
    for name, rate in rates.items():
        print(f"  {name:26s} {rate:8.1f}")
    dis = rates["dis fast (actrec 'dis')"]
    farneback = rates["farneback (actrec)"]
    print(f"  ratio DIS / Farneback: {dis / farneback:.2f}  (target: DIS >= 300 frames/s per core)")
    if "tvl1" not in available_flow_methods():
        print("  tvl1: not available (needs opencv-contrib-python-headless)")

    cpus = os.cpu_count() or 1
    import tensorflow  # noqa: F401  the shard writer's one-time import, kept out of the timings

    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        config = SyntheticConfig(videos_per_class=arguments.videos_per_class)
        generate_synthetic_dataset(folder / "raw", config)
        listing = list_videos("synthetic", folder / "raw")
        print(
            f"\nend-to-end prepare, synthetic set: {len(listing.entries)} videos of "
            f"{config.num_frames} frames at {config.width}x{config.height}"
        )
        runs = [
            ("dis, 1 worker", "dis", "original", 1),
            (f"dis, {cpus} workers", "dis", "original", cpus),
            (f"rgb only, {cpus} workers", "none", "original", cpus),
            (f"dis 340x256, {cpus} workers", "dis", "340x256", cpus),
        ]
        results = {}
        for index, (name, method, frame_size, workers) in enumerate(runs):
            settings = PrepareSettings(frame_size=frame_size, flow=method)
            results[name] = prepare_rate(listing, folder / f"out{index}", settings, workers)
            videos_rate, frames_rate = results[name]
            print(f"  {name:26s} {videos_rate:7.1f} videos/s {frames_rate:8.0f} frames/s")
        one, many = results[runs[0][0]][0], results[runs[1][0]][0]
        print(f"  ratio {cpus} workers / 1 worker: {many / one:.2f}")


if __name__ == "__main__":
    main()
