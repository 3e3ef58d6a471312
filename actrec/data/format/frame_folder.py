"""A folder of image files read as one video: frames in file-name order.

Datasets shipped as frames (Jester: one folder of JPEGs per video, 00001.jpg, ...) are read
as they are, with no re-encoding to a video first. `iter_frames` is what the encoder calls:
a folder is read here, a file by actrec.data.format.video.

A folder's frames carry no rate: it is the one its dataset states (Jester and
Something-Something V2: 12 frames/s), DEFAULT_FOLDER_FPS unless a source says otherwise.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np

from actrec.data.format.video import FrameSize, iter_video_frames, resize_frame
from actrec.errors import ConfigError, VideoReadError

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".webp")
DEFAULT_FOLDER_FPS = 12.0
"""The frame rate of a frame folder (Jester's and Something-Something V2's)."""
NUMBER_PATTERN = re.compile(r"(\d+)(?=\.[^.]+$)")


def is_image_file(name: str) -> bool:
    """Whether a file name looks like an image frame (known extension, not hidden)."""
    return not name.startswith(".") and os.path.splitext(name)[1].lower() in IMAGE_EXTENSIONS


def is_frame_folder(path: Path) -> bool:
    """Whether `path` is a folder holding image files and nothing else (no sub-folders)."""
    if not path.is_dir():
        return False
    names = [name for name in os.listdir(path) if not name.startswith(".")]
    return bool(names) and all(is_image_file(name) and (path / name).is_file() for name in names)


def frame_paths(folder: Path) -> list[Path]:
    """The image files of `folder` in file-name order; VideoReadError naming the folder when
    it holds none, or when its numbered names skip a number ("frame-gap": 00003.jpg after
    00001.jpg)."""
    names = sorted(name for name in os.listdir(folder) if is_image_file(name))
    if not names:
        raise VideoReadError(folder, "undecodable", "the frame folder holds no image file")
    numbers = [NUMBER_PATTERN.search(name) for name in names]
    if all(numbers):
        values = [int(match.group(1)) for match in numbers]
        for previous, current, name in zip(values, values[1:], names[1:], strict=False):
            if current != previous + 1:
                raise VideoReadError(
                    folder,
                    "frame-gap",
                    f"frame numbering has a gap in {folder}: {name} follows frame {previous}",
                )
    return [folder / name for name in names]


def source_indices(frame_count: int, step: float | None) -> list[int]:
    """Which source frame each output frame is: output k is the frame nearest time k / fps
    (step = source frames per output frame; None: every frame once)."""
    if step is None:
        return list(range(frame_count))
    output_count = max(1, math.ceil(frame_count / step))
    return [min(frame_count - 1, math.floor(k * step + 0.5)) for k in range(output_count)]


def iter_folder_frames(
    folder: os.PathLike | str,
    frame_size: FrameSize | None = None,
    fps: float | None = None,
    channel_order: str = "rgb",
    source_fps: float = DEFAULT_FOLDER_FPS,
) -> Iterator[np.ndarray]:
    """uint8 frames [H, W, 3] of a frame folder, in file-name order (as iter_video_frames:
    resized per `frame_size`, resampled to `fps` from `source_fps`). Raises VideoReadError
    ("missing", "frame-gap", "undecodable": an image that does not decode)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise VideoReadError(folder, "missing", "no such frame folder")
    if fps is not None and not (math.isfinite(fps) and fps > 0):
        raise ConfigError(f"frame rate {fps!r} is not valid; give a positive number of frames/s.")
    paths = frame_paths(folder)
    step = None if fps is None else source_fps / fps
    return _decoded_images(paths, source_indices(len(paths), step), frame_size, channel_order)


def _decoded_images(
    paths: list[Path], indices: list[int], frame_size: FrameSize | None, channel_order: str
) -> Iterator[np.ndarray]:
    """The images `paths[i]` for i in `indices` (each decoded once), resized, as frames."""
    previous_index, previous_frame = -1, None
    for index in indices:
        if index != previous_index:
            image = cv2.imread(str(paths[index]), cv2.IMREAD_COLOR)  # BGR [H, W, 3]
            if image is None:
                raise VideoReadError(paths[index], "undecodable", "the image does not decode")
            previous_frame = resize_frame(image, frame_size)
            if channel_order == "rgb":
                previous_frame = cv2.cvtColor(previous_frame, cv2.COLOR_BGR2RGB)
            previous_index = index
            yield previous_frame
        else:
            yield previous_frame.copy()


def iter_frames(
    path: os.PathLike | str,
    frame_size: FrameSize | None = None,
    fps: float | None = None,
    channel_order: str = "rgb",
) -> Iterator[np.ndarray]:
    """The frames of a video file or of a frame folder (see iter_video_frames)."""
    if Path(path).is_dir():
        return iter_folder_frames(path, frame_size, fps, channel_order)
    return iter_video_frames(path, frame_size, fps, channel_order)
