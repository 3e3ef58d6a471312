"""Optical flow accuracy and speed per CPU core at 340x256, for every `--flow` method.

    python benchmarks/flow.py [--seconds 3] [--frames-per-clip 4] [--fields-per-frame 2]

Accuracy: real frames (the Kinetics and UCF101 clips of tests/assets/videos, resized to
340x256 as `actrec prepare --size 340x256` does) warped by known smooth motion fields
(a random translation, rotation and zoom plus two long-wavelength waves; up to ~12 px per
frame at the corners, ~4 px typical). The pair (frame warped by u, frame) has exactly u
as its flow, so the end-point error |estimate - u| (mean over the pixels whose motion
stays inside the frame, 16 px border left out) measures the estimator alone; "stored" is
the same after actrec's uint8 quantisation and JPEG (quality 90), what training reads.
Speed: flow fields per CPU-second of this process (time.process_time) with
cv2.setNumThreads(1), over the same pairs, all methods in one run. TV-L1 needs OpenCV's
contrib module (opencv-contrib-python-headless); without it the row says so.
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

from real_clips import CLIPS, grey_frames  # benchmarks/real_clips.py

from actrec.data.format.flow import (
    available_flow_methods,
    create_flow_estimator,
    dequantize_flow,
    quantize_flow,
)
from actrec.data.format.flow_methods import FLOW_METHODS

BORDER = 16  # px left out of the error: pyramid and warp borders
JPEG_QUALITY = 90  # actrec prepare's default --jpeg-quality


def smooth_field(height: int, width: int, rng: np.random.Generator) -> np.ndarray:
    """A known smooth motion field float32 [H, W, 2] (dx, dy) in pixels."""
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)  # [H, W] each
    xs_centred, ys_centred = xs - (width - 1) / 2, ys - (height - 1) / 2
    shift_x, shift_y = rng.uniform(-3.0, 3.0, 2)
    angle, zoom = np.deg2rad(rng.uniform(-2.0, 2.0)), rng.uniform(-0.03, 0.03)
    dx = shift_x + zoom * xs_centred - angle * ys_centred
    dy = shift_y + zoom * ys_centred + angle * xs_centred
    for _ in range(2):  # waves of 120-320 px wavelength, up to 2 px amplitude
        direction, phase = rng.uniform(0.0, 2 * np.pi, 2)
        wavelength = rng.uniform(120.0, 320.0)
        amplitude_x, amplitude_y = rng.uniform(0.5, 2.0, 2)
        along = (xs * np.cos(direction) + ys * np.sin(direction)) * (2 * np.pi / wavelength)
        dx = dx + amplitude_x * np.sin(along + phase)
        dy = dy + amplitude_y * np.cos(along + phase)
    return np.stack([dx, dy], axis=-1).astype(np.float32)  # [H, W, 2]


def warped_pair(frame: np.ndarray, field: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(previous, next, valid): previous(x) = frame(x + field(x)) and next = frame, so
    the flow from previous to next is `field`; valid [H, W] bool marks the pixels whose
    motion stays inside the frame, away from the border."""
    height, width = frame.shape
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    map_x, map_y = xs + field[..., 0], ys + field[..., 1]
    previous = cv2.remap(frame, map_x, map_y, cv2.INTER_CUBIC, borderMode=cv2.BORDER_REFLECT_101)
    valid = (map_x >= 0) & (map_x <= width - 1) & (map_y >= 0) & (map_y <= height - 1)
    interior = np.zeros_like(valid)
    interior[BORDER:-BORDER, BORDER:-BORDER] = True
    return previous, frame, valid & interior


def test_pairs(frames_per_clip: int, fields_per_frame: int) -> list[tuple]:
    """(previous, next, field, valid) of real frames warped by known fields."""
    rng = np.random.default_rng(2024)
    pairs = []
    for clip in CLIPS:
        frames = grey_frames(clip)
        chosen = np.linspace(0, len(frames) - 1, frames_per_clip).round().astype(int)
        for index in chosen:
            for _ in range(fields_per_frame):
                field = smooth_field(*frames[index].shape, rng)
                previous, following, valid = warped_pair(frames[index], field)
                pairs.append((previous, following, field, valid))
    return pairs


def stored(flow: np.ndarray) -> np.ndarray:
    """`flow` [H, W, 2] as training reads it back: quantised, JPEG-coded, dequantised."""
    planes = []
    for plane in cv2.split(quantize_flow(flow)):
        _, encoded = cv2.imencode(".jpg", plane, [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
        planes.append(cv2.imdecode(encoded, cv2.IMREAD_GRAYSCALE))
    return dequantize_flow(np.stack(planes, axis=-1))


def endpoint_errors(estimate, pairs) -> tuple[float, float]:
    """Mean end-point error (px) of the estimate and of its stored form, over `pairs`."""
    raw, kept = [], []
    for previous, following, field, valid in pairs:
        flow = estimate(previous, following)
        raw.append(np.linalg.norm(flow - field, axis=-1)[valid].mean())
        kept.append(np.linalg.norm(stored(flow) - field, axis=-1)[valid].mean())
    return float(np.mean(raw)), float(np.mean(kept))


def fields_per_cpu_second(estimate, pairs, seconds: float) -> float:
    """Flow fields per CPU-second over `pairs` cycled for at least `seconds` of CPU time."""
    estimate(*pairs[0][:2])  # warm-up: allocations, pyramid buffers
    started = time.process_time()
    for count, (previous, following, _, _) in enumerate(itertools.cycle(pairs), start=1):
        estimate(previous, following)
        elapsed = time.process_time() - started
        if elapsed >= seconds and count >= len(pairs):
            return count / elapsed
    raise AssertionError("unreachable")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="CPU time per method")
    parser.add_argument("--frames-per-clip", type=int, default=4)
    parser.add_argument("--fields-per-frame", type=int, default=2)
    arguments = parser.parse_args()
    cv2.setNumThreads(1)
    pairs = test_pairs(arguments.frames_per_clip, arguments.fields_per_frame)
    height, width = pairs[0][0].shape
    magnitudes = np.concatenate([np.linalg.norm(p[2], axis=-1)[p[3]] for p in pairs])
    print(
        f"optical flow at {width}x{height}, one OpenCV thread, OpenCV {cv2.__version__}: "
        f"{len(pairs)} real frames of {len(CLIPS)} clips warped by known smooth fields "
        f"(motion mean {magnitudes.mean():.1f} px, max {magnitudes.max():.1f} px)"
    )
    print()
    print("| `--flow` | EPE px | EPE px, stored (uint8 + JPEG 90) | frames/s per core | speed |")
    print("|---|---|---|---|---|")
    available = available_flow_methods()
    dis_rate = None
    for method in FLOW_METHODS:
        if method not in available:
            print(f"| `{method}` | skipped: needs opencv-contrib-python-headless | | | |")
            continue
        estimate = create_flow_estimator(method)
        error, stored_error = endpoint_errors(estimate, pairs)
        rate = fields_per_cpu_second(estimate, pairs, arguments.seconds)
        dis_rate = dis_rate or rate  # "dis" comes first
        speed = "1 (reference)" if rate == dis_rate else f"1/{dis_rate / rate:.3g} of dis"
        print(f"| `{method}` | {error:.2f} | {stored_error:.2f} | {rate:.3g} | {speed} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
