"""Preparation speed per CPU core: `actrec prepare` against bare DIS on the same frames.

    python benchmarks/prepare.py [--rounds 5] [--flow dis] [--end-to-end]

1. Per core at 340x256, on the real clips of tests/assets/videos (Kinetics H.264 454x256,
   UCF101 Xvid 320x240): the CPU time (time.process_time, this process) of preparing a
   clip as `actrec prepare --size 340x256` does it in a worker (decode, resize, DIS, flow
   quantisation, three JPEG encodes, the record), against DIS alone on the same frames
   (decoded, resized and made grey beforehand, untimed). Both arms run with
   cv2.setNumThreads(1), as the preparation workers do. Rounds alternate the arms; the
   ratio (DIS CPU time / prepare CPU time, i.e. prepare's rate as a share of DIS's) is the
   median over rounds. --flow dis-medium measures both arms with the DIS medium preset.
2. Where prepare's time goes: the stages clocked inside one loop making prepare's calls
   in prepare's order (best round per stage), in ms per frame and as a share of bare DIS;
   "rest" is prepare's time outside them (building the record, Python).
3. --end-to-end: `prepare_dataset` on the synthetic set (192 small videos) with 1 worker
   and with every CPU, RGB only, and at 340x256: videos/s and frames/s, and the ratio of
   all workers to one.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import cv2

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from real_clips import CLIPS, FRAME_SIZE, clip_frames  # benchmarks/real_clips.py

from actrec.data.format.flow import create_flow_estimator, quantize_flow_planes
from actrec.data.format.frame_encoding import jpeg_bytes
from actrec.data.format.video import FrameSize, iter_video_frames, resize_frame
from actrec.data.prepare.encode_video import PrepareSettings, VideoTask, encode_video

JPEG_QUALITY = PrepareSettings().jpeg_quality
STAGES = (
    "decode (FFmpeg, to BGR)",
    f"resize to {FRAME_SIZE}",
    "JPEG of the frame",
    "grey conversion",
    "DIS",
    "flow quantisation",
    "2 flow JPEGs",
)


def cpu_seconds(work: Callable[[], object]) -> float:
    started = time.process_time()
    work()
    return time.process_time() - started


def prepare_clip(path: Path, method: str) -> int:
    """Prepare one clip as a worker does, with flow `method`; its number of frames."""
    task = VideoTask(0, path.stem, str(path), 0, "clip", "train")
    result = encode_video(task, PrepareSettings(frame_size=FRAME_SIZE, flow=method))
    assert result.records is not None, result.detail
    return result.num_frames


def dis_alone(greys, method: str) -> Callable[[], None]:
    estimate = create_flow_estimator(method)

    def run() -> None:
        for previous, following in itertools.pairwise(greys):
            estimate(previous, following)

    return run


def ratio_rounds(path: Path, rounds: int, method: str) -> tuple[int, list[float], list[float]]:
    """(frames, DIS CPU seconds per round, prepare CPU seconds per round) of one clip."""
    greys = [cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY) for frame in clip_frames(path)]
    run_dis = dis_alone(greys, method)
    run_dis(), prepare_clip(path, method)  # warm-up: file cache, allocations
    dis_times, prepare_times = [], []
    for _ in range(rounds):
        dis_times.append(cpu_seconds(run_dis))
        prepare_times.append(cpu_seconds(lambda: prepare_clip(path, method)))
    return len(greys), dis_times, prepare_times


def stage_times(path: Path, rounds: int, method: str) -> dict[str, float]:
    """CPU seconds of each preparation stage over the whole clip, best of `rounds`."""
    best: dict[str, float] = {}
    for _ in range(rounds):
        spent = stage_times_once(path, method)
        best = {stage: min(best.get(stage, spent[stage]), spent[stage]) for stage in spent}
    return best


def stage_times_once(path: Path, method: str) -> dict[str, float]:
    """CPU seconds of each stage, clocked between the calls actrec.data.format.frame_encoding
    makes, in its order, so each stage finds its input as warm in cache as there."""
    size = FrameSize.parse(FRAME_SIZE)
    spent: dict[str, float] = dict.fromkeys(STAGES, 0.0)
    estimate, previous_grey = create_flow_estimator(method), None
    clock = time.process_time()

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.process_time()
        spent[stage] += now - clock
        clock = now

    for decoded in iter_video_frames(path, channel_order="bgr"):  # BGR [H, W, 3]
        lap("decode (FFmpeg, to BGR)")
        frame = resize_frame(decoded, size)
        lap(f"resize to {FRAME_SIZE}")
        jpeg_bytes(frame, JPEG_QUALITY)
        lap("JPEG of the frame")
        grey = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
        lap("grey conversion")
        if previous_grey is not None:
            flow = estimate(previous_grey, grey)
            lap("DIS")
            planes = quantize_flow_planes(flow, overwrite=True)
            lap("flow quantisation")
            [jpeg_bytes(plane, JPEG_QUALITY) for plane in planes]
            lap("2 flow JPEGs")
        previous_grey = grey
    return spent


def per_core_report(rounds: int, method: str) -> None:
    cv2.setNumThreads(1)
    print(
        f"actrec prepare --flow {method} vs bare {method}, per core at {FRAME_SIZE} (CPU time "
        f"of this process, cv2.setNumThreads(1), OpenCV {cv2.__version__}, {rounds} "
        "alternating rounds)"
    )
    print(f"{'clip':28s} {'frames':>6s} {'DIS f/s':>8s} {'prepare f/s':>11s} {'ratio':>6s}")
    measured = {path: ratio_rounds(path, rounds, method) for path in CLIPS}
    for path, (frames, dis_times, prepare_times) in measured.items():
        print_ratio_row(path.name, frames, dis_times, prepare_times)
    print_ratio_row(
        "both",
        sum(frames for frames, _, _ in measured.values()),
        [sum(times) for times in zip(*(m[1] for m in measured.values()), strict=True)],
        [sum(times) for times in zip(*(m[2] for m in measured.values()), strict=True)],
    )

    print("\nwhere prepare's time goes (ms per frame; % of bare DIS's time), best round:")
    print(f"{'stage':28s}" + "".join(f" {path.name[:26]:>26s}" for path in CLIPS))
    columns = []
    for path, (frames, dis_times, prepare_times) in measured.items():
        times = stage_times(path, rounds, method)
        times["rest (record, Python)"] = min(prepare_times) - sum(times.values())
        times["total prepare"] = min(prepare_times)
        times["bare DIS (the other arm)"] = min(dis_times)
        columns.append((frames, times))
    for stage in columns[0][1]:
        cells = "".join(
            f" {1000 * times[stage] / frames:9.3f} ms"
            f" {100 * times[stage] / times['bare DIS (the other arm)']:7.1f} %    "
            for frames, times in columns
        )
        print(f"{stage:28s}{cells}")


def print_ratio_row(name: str, frames: int, dis_times: list[float], prepare_times: list[float]):
    ratio = statistics.median(d / p for d, p in zip(dis_times, prepare_times, strict=True))
    dis_rate = (frames - 1) / statistics.median(dis_times)
    prepare_rate = frames / statistics.median(prepare_times)
    print(f"{name:28s} {frames:6d} {dis_rate:8.0f} {prepare_rate:11.0f} {ratio:6.2f}")


def end_to_end_report(videos_per_class: int) -> None:
    import tensorflow  # noqa: F401  the shard writer's one-time import, kept out of the timings

    from actrec.data.prepare.dataset import prepare_dataset
    from actrec.data.sources import list_videos
    from actrec.data.synthetic.config import SyntheticConfig
    from actrec.data.synthetic.dataset import generate_synthetic_dataset

    cpus = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        config = SyntheticConfig(videos_per_class=videos_per_class)
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
        rates = {}
        for index, (name, method, frame_size, workers) in enumerate(runs):
            settings = PrepareSettings(frame_size=frame_size, flow=method)
            started = time.perf_counter()
            summary = prepare_dataset(listing, folder / f"out{index}", settings, workers=workers)
            elapsed = time.perf_counter() - started
            rates[name] = sum(summary.prepared.values()) / elapsed
            frames_rate = sum(summary.frames_by_split.values()) / elapsed
            print(f"  {name:26s} {rates[name]:7.1f} videos/s {frames_rate:8.0f} frames/s")
        print(f"  ratio {cpus} workers / 1 worker: {rates[runs[1][0]] / rates[runs[0][0]]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="alternating timed rounds")
    parser.add_argument(
        "--flow", choices=("dis", "dis-medium"), default="dis", help="the DIS preset of both arms"
    )
    parser.add_argument("--end-to-end", action="store_true", help="also the synthetic set")
    parser.add_argument("--videos-per-class", type=int, default=12)
    arguments = parser.parse_args()
    per_core_report(arguments.rounds, arguments.flow)
    if arguments.end_to_end:
        end_to_end_report(arguments.videos_per_class)


if __name__ == "__main__":
    main()
