"""A camera-motion set cut from real footage, prepared with DIS flow: the second table of
benchmarks/distill.py (the synthetic set moves drawn shapes; this moves a camera window over
real clips, as `actrec synthetic` moves its shapes).

    python benchmarks/camera_motion_set.py --out DIR [--clips CLIP ...] [--videos-per-class 24]

8 classes, the window's motion over the clip as it plays: PanLeft, PanRight, TiltUp,
TiltDown, ZoomIn, ZoomOut, RotateClockwise, RotateCounterclockwise. Each video takes 24
frames of a random real clip (tests/assets/videos, or --clips) from a random start, and cuts a
128x96 window from each that pans 1.5-2.5 px, zooms 1.5-2.5 % or turns 3-5 degrees per
frame, from a random centre, scale and angle. Written in UCF101 layout (the synthetic set's:
DIR/raw/<Class>/v_<Class>_gGG_cCC.avi and DIR/raw/splits, groups 1-2 tested) and prepared
like it (frames at 128x96, DIS flow) into DIR/prepared, whose path it prints.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import cv2
import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
CLIPS = sorted((REPO_ROOT / "tests" / "assets" / "videos").glob("*.*"))
CLASSES = (
    "PanLeft",
    "PanRight",
    "TiltUp",
    "TiltDown",
    "ZoomIn",
    "ZoomOut",
    "RotateClockwise",
    "RotateCounterclockwise",
)
WIDTH, HEIGHT, FRAMES, CLIPS_PER_GROUP, TEST_GROUPS = 128, 96, 24, 4, 2
# The window's motion per frame: (dx, dy) pixels, the zoom sign, the rotation sign.
MOTIONS = {
    "PanLeft": ((-1, 0), 0, 0),
    "PanRight": ((1, 0), 0, 0),
    "TiltUp": ((0, -1), 0, 0),
    "TiltDown": ((0, 1), 0, 0),
    "ZoomIn": ((0, 0), 1, 0),
    "ZoomOut": ((0, 0), -1, 0),
    "RotateClockwise": ((0, 0), 0, 1),
    "RotateCounterclockwise": ((0, 0), 0, -1),
}


def decoded(path: Path) -> list[np.ndarray]:
    """Every frame of a clip, RGB uint8 [H, W, 3]."""
    capture = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            return frames
        frames.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))


def window_video(frames: list[np.ndarray], motion, rng: np.random.Generator) -> np.ndarray:
    """FRAMES windows uint8 [FRAMES, HEIGHT, WIDTH, 3] of a clip, moved by `motion`."""
    (dx, dy), zoom, turn = motion
    height, width = frames[0].shape[:2]
    start = int(rng.integers(0, max(1, len(frames) - FRAMES)))
    speed = rng.uniform(1.5, 2.5)
    rate = 1.0 + zoom * rng.uniform(0.015, 0.025)
    angular = math.radians(turn * rng.uniform(3.0, 5.0))
    scale = rng.uniform(0.8, 1.2)  # source pixels per output pixel at the middle frame
    angle = rng.uniform(0.0, 2.0 * math.pi) if turn else 0.0
    margin = 0.5 * math.hypot(WIDTH, HEIGHT) * scale * 1.3 + speed * FRAMES / 2
    centre = np.array(
        [
            rng.uniform(margin, max(margin, width - margin)),
            rng.uniform(min(margin, height / 2), max(min(margin, height / 2), height - margin)),
        ]
    )
    out = []
    for t in range(FRAMES):
        offset = t - FRAMES / 2
        position = centre + speed * offset * np.array([dx, dy])
        size = scale / rate**offset  # zooming in: fewer source pixels per output pixel
        theta = angle + angular * offset
        rotation = size * np.array(
            [[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]]
        )
        shift = position - rotation @ np.array([WIDTH / 2, HEIGHT / 2])
        matrix = np.hstack([rotation, shift[:, None]])  # output pixel -> source pixel
        frame = frames[(start + t) % len(frames)]
        out.append(
            cv2.warpAffine(
                frame,
                matrix,
                (WIDTH, HEIGHT),
                flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                borderMode=cv2.BORDER_REFLECT,
            )
        )
    return np.stack(out)


def write_set(root: Path, clips: list[Path], videos_per_class: int, seed: int) -> Path:
    """The camera-motion videos and UCF101-style split files under `root`."""
    from actrec.data.synthetic.video_writer import write_video

    rng = np.random.default_rng(seed)
    sources = [decoded(path) for path in clips]
    train_lines, test_lines = [], []
    for index, name in enumerate(CLASSES):
        (root / name).mkdir(parents=True, exist_ok=True)
        for number in range(videos_per_class):
            group, clip = number // CLIPS_PER_GROUP + 1, number % CLIPS_PER_GROUP + 1
            relative = f"{name}/v_{name}_g{group:02d}_c{clip:02d}.avi"
            frames = sources[int(rng.integers(0, len(sources)))]
            write_video(root / relative, window_video(frames, MOTIONS[name], rng), fps=25.0)
            if group <= TEST_GROUPS:
                test_lines.append(relative)
            else:
                train_lines.append(f"{relative} {index + 1}")
    splits = root / "splits"
    splits.mkdir(exist_ok=True)
    class_lines = [f"{index + 1} {name}" for index, name in enumerate(CLASSES)]
    for file_name, lines in (
        ("classInd.txt", class_lines),
        ("trainlist01.txt", train_lines),
        ("testlist01.txt", test_lines),
    ):
        (splits / file_name).write_bytes(("\r\n".join(lines) + "\r\n").encode())
    return root


def main() -> None:
    from actrec.data.prepare.dataset import prepare_dataset
    from actrec.data.prepare.encode_video import PrepareSettings
    from actrec.data.sources import list_videos

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--clips", type=Path, nargs="+", default=CLIPS)
    parser.add_argument("--videos-per-class", type=int, default=24)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    raw = write_set(args.out / "raw", list(args.clips), args.videos_per_class, args.seed)
    prepared = args.out / "prepared"
    prepare_dataset(list_videos("synthetic", raw), prepared, PrepareSettings(frame_size="original"))
    print(prepared)


if __name__ == "__main__":
    main()
