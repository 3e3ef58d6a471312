"""The real clips the preparation benchmarks run on (copied into the test data).

- abseiling_k400.mp4: Kinetics-400, H.264, 454x256, 25 fps, 250 frames.
- v_Basketball_g01_c01.avi: UCF101, Xvid (MPEG-4 part 2), 320x240, 29.97 fps, 141 frames.

Both are prepared at TSN's 340x256 (`actrec prepare --size 340x256`).
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
CLIPS = (
    REPO_ROOT / "tests" / "data" / "videos" / "abseiling_k400.mp4",
    REPO_ROOT / "tests" / "data" / "videos" / "v_Basketball_g01_c01.avi",
)
FRAME_SIZE = "340x256"


def clip_frames(path: Path, frame_size: str = FRAME_SIZE) -> list[np.ndarray]:
    """The BGR frames [H, W, 3] of a clip, decoded and resized as `actrec prepare` does."""
    from actrec.data.format.video import FrameSize, iter_video_frames

    return list(iter_video_frames(path, FrameSize.parse(frame_size), channel_order="bgr"))


def grey_frames(path: Path, frame_size: str = FRAME_SIZE) -> list[np.ndarray]:
    """The grey frames [H, W] of a clip, as `actrec prepare` hands them to optical flow."""
    return [cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY) for frame in clip_frames(path, frame_size)]
