"""Writing RGB frames as a video file, atomically (MJPG .avi or mp4v .mp4, by OpenCV).

This module must not import TensorFlow.
"""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np

from actrec.errors import ActrecError
from actrec.files.atomic import commit_temporary

FOURCC_BY_EXTENSION = {".avi": "MJPG", ".mp4": "mp4v"}


def _temporary_video_path(path: Path) -> Path:
    """A hidden name beside `path` that keeps its extension: OpenCV picks the container
    from it, so actrec.files.atomic.temporary_path (which ends in .tmp) cannot be used."""
    return path.with_name(f".{path.stem}.partial-{os.getpid()}{path.suffix}")


def write_video(path: os.PathLike | str, frames_rgb: np.ndarray, fps: float) -> None:
    """Write RGB uint8 frames [T, H, W, 3] as a video file, atomically.

    The container follows the extension: .avi -> MJPG, .mp4 -> mp4v. The file is
    written under a temporary name in the same folder, synced, then renamed.
    Raises ActrecError when the extension is not supported or OpenCV cannot write.
    """
    video_path = Path(path)
    suffix = video_path.suffix.lower()
    if suffix not in FOURCC_BY_EXTENSION:
        raise ActrecError(
            f"{video_path}: cannot write videos with extension {video_path.suffix!r}; "
            f"use one of {', '.join(FOURCC_BY_EXTENSION)}."
        )
    frames = np.asarray(frames_rgb)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8 or not len(frames):
        raise ValueError(
            f"frames must be uint8 [T, H, W, 3] with T >= 1; got {frames.dtype} {frames.shape}"
        )
    height, width = frames.shape[1:3]
    temporary = _temporary_video_path(video_path)
    fourcc = cv2.VideoWriter_fourcc(*FOURCC_BY_EXTENSION[suffix])
    writer = cv2.VideoWriter(str(temporary), cv2.CAP_FFMPEG, fourcc, float(fps), (width, height))
    try:
        if not writer.isOpened():
            raise ActrecError(
                f"{video_path}: OpenCV could not open a {FOURCC_BY_EXTENSION[suffix]} video "
                f"writer ({width}x{height} at {fps} frames/s); check that the folder is "
                "writable and that OpenCV was built with FFmpeg."
            )
        for frame in frames:
            writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
        writer.release()
        commit_temporary(temporary, video_path)
    finally:
        writer.release()
        temporary.unlink(missing_ok=True)
