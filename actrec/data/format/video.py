"""Decode video files into RGB frames with OpenCV: resize and frame-rate resampling.

Frames are streamed (at most two decoded frames in memory at a time) so long videos
never have to fit in memory. Every failure to use a file is a `VideoReadError` whose `reason` is a
short code for reports: "missing", "empty-file" or "undecodable". A truncated file
yields the frames that decode and then stops, without an exception.

This module must not import TensorFlow: it runs in the preparation worker processes.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from actrec.errors import ConfigError, VideoReadError

FRAME_SIZE_FORMS = '"256" (short side in pixels), "340x256" (width x height) or "original"'
_FIXED_SIZE_PATTERN = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*$")
_SHORT_SIDE_PATTERN = re.compile(r"^\s*(\d+)\s*$")


@dataclass(frozen=True)
class FrameSize:
    """How decoded frames are resized.

    short_side: resize so the shorter side has this many pixels, keeping the aspect
        ratio (the longer side is rounded to the nearest even number).
    width, height: when both are set, resize to exactly this size (e.g. 340x256, the
        TSN convention); they take precedence over `short_side`.
    With neither (short_side=None, width=height=None) frames keep their original size.
    """

    short_side: int | None = 256
    width: int | None = None
    height: int | None = None

    def __post_init__(self) -> None:
        if (self.width is None) != (self.height is None):
            raise ConfigError(
                f"frame size: width={self.width} and height={self.height}; give both "
                f"(a fixed size) or neither. Accepted forms: {FRAME_SIZE_FORMS}."
            )
        for name in ("short_side", "width", "height"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigError(
                    f"frame size: {name}={value!r} must be a positive whole number of "
                    f"pixels. Accepted forms: {FRAME_SIZE_FORMS}."
                )

    @classmethod
    def parse(cls, text: str) -> FrameSize:
        """The frame size written as "256", "340x256" or "original"."""
        value = str(text)
        if value.strip().lower() == "original":
            return cls(short_side=None)
        fixed = _FIXED_SIZE_PATTERN.match(value)
        if fixed:
            width, height = int(fixed.group(1)), int(fixed.group(2))
            if width > 0 and height > 0:
                return cls(short_side=None, width=width, height=height)
        short = _SHORT_SIDE_PATTERN.match(value)
        if short and int(short.group(1)) > 0:
            return cls(short_side=int(short.group(1)))
        raise ConfigError(f"frame size {value!r} is not valid; accepted forms: {FRAME_SIZE_FORMS}.")

    @property
    def is_fixed(self) -> bool:
        return self.width is not None and self.height is not None

    @property
    def is_original(self) -> bool:
        return not self.is_fixed and self.short_side is None

    def output_shape(self, width: int, height: int) -> tuple[int, int]:
        """(out_width, out_height) of a frame of `width` x `height` pixels."""
        if self.is_fixed:
            return int(self.width), int(self.height)
        if self.short_side is None:
            return int(width), int(height)
        if width <= height:
            return self.short_side, _nearest_even(height * self.short_side / width)
        return _nearest_even(width * self.short_side / height), self.short_side

    def describe(self) -> str:
        """ "short-side-256", "340x256" or "original", for the manifest."""
        if self.is_fixed:
            return f"{self.width}x{self.height}"
        if self.short_side is None:
            return "original"
        return f"short-side-{self.short_side}"


@dataclass(frozen=True)
class VideoInfo:
    """What the container declares: frame size, rate and count (0 when unknown)."""

    width: int
    height: int
    fps: float
    frame_count: int


def _nearest_even(value: float) -> int:
    return max(2, 2 * math.floor(value / 2 + 0.5))


def _capture_backend() -> int:
    """FFmpeg when this OpenCV build has it (it never reads a name as an image pattern)."""
    if cv2.videoio_registry.hasBackend(cv2.CAP_FFMPEG):
        return cv2.CAP_FFMPEG
    return cv2.CAP_ANY


def _checked_path(path: os.PathLike | str) -> Path:
    """The path of an existing, non-empty file, else VideoReadError."""
    video_path = Path(path)
    if not video_path.exists():
        raise VideoReadError(video_path, "missing", "no such file")
    if not video_path.is_file():
        raise VideoReadError(video_path, "undecodable", "not a regular file")
    if video_path.stat().st_size == 0:
        raise VideoReadError(video_path, "empty-file", "the file is empty (0 bytes)")
    return video_path


def _opened_capture(video_path: Path) -> cv2.VideoCapture:
    """An open capture whose decoder uses as many threads as OpenCV's own functions.

    FFmpeg otherwise starts one decoding thread per CPU: a preparation worker process
    (cv2.setNumThreads(1), one per core) then pays for thread hand-offs it cannot use:
    11 % more CPU time per decoded frame on the H.264 test clip, 21 % on the Xvid one.
    """
    parameters = [cv2.CAP_PROP_N_THREADS, max(1, cv2.getNumThreads())]
    capture = cv2.VideoCapture(str(video_path), _capture_backend(), parameters)
    if not capture.isOpened():
        capture.release()
        raise VideoReadError(
            video_path,
            "undecodable",
            "OpenCV cannot open this file as a video (not a video, or corrupt)",
        )
    return capture


def _declared_fps(capture: cv2.VideoCapture) -> float:
    fps = float(capture.get(cv2.CAP_PROP_FPS))
    return fps if math.isfinite(fps) and fps > 0 else 0.0


def _declared_frame_count(capture: cv2.VideoCapture) -> int:
    count = float(capture.get(cv2.CAP_PROP_FRAME_COUNT))
    return int(count) if math.isfinite(count) and count > 0 else 0


def _declared_size(capture: cv2.VideoCapture) -> tuple[int, int]:
    """(width, height) of the frames OpenCV returns (after any automatic rotation)."""
    width = int(capture.get(cv2.CAP_PROP_FRAME_WIDTH))
    height = int(capture.get(cv2.CAP_PROP_FRAME_HEIGHT))
    rotation = int(capture.get(cv2.CAP_PROP_ORIENTATION_META)) % 360
    rotates = capture.get(cv2.CAP_PROP_ORIENTATION_AUTO) != 0
    if rotates and rotation in (90, 270):
        width, height = height, width
    return width, height


def probe_video(path: os.PathLike | str) -> VideoInfo:
    """The declared size, frame rate and frame count of a video, without decoding it all.

    Raises VideoReadError ("missing", "empty-file", "undecodable").
    """
    video_path = _checked_path(path)
    capture = _opened_capture(video_path)
    try:
        width, height = _declared_size(capture)
        if width <= 0 or height <= 0:
            ok, frame = capture.read()
            if not ok or frame is None:
                raise VideoReadError(video_path, "undecodable", "the video yields no frame")
            height, width = frame.shape[:2]
        return VideoInfo(
            width=width,
            height=height,
            fps=_declared_fps(capture),
            frame_count=_declared_frame_count(capture),
        )
    finally:
        capture.release()


def resize_frame(frame: np.ndarray, frame_size: FrameSize | None) -> np.ndarray:
    """`frame` [H, W, C] resized per `frame_size` (INTER_AREA shrinking, INTER_LINEAR growing)."""
    if frame_size is None or frame_size.is_original:
        return frame
    height, width = frame.shape[:2]
    out_width, out_height = frame_size.output_shape(width, height)
    if (out_width, out_height) == (width, height):
        return frame
    shrinking = out_width * out_height < width * height
    interpolation = cv2.INTER_AREA if shrinking else cv2.INTER_LINEAR
    return cv2.resize(frame, (out_width, out_height), interpolation=interpolation)


def _three_channel_frame(frame_bgr: np.ndarray, channel_order: str) -> np.ndarray:
    """`frame_bgr` (BGR, BGRA or grey) as [H, W, 3] in `channel_order` ("rgb" or "bgr")."""
    rgb = channel_order == "rgb"
    if frame_bgr.ndim == 2:
        return cv2.cvtColor(frame_bgr, cv2.COLOR_GRAY2RGB if rgb else cv2.COLOR_GRAY2BGR)
    if frame_bgr.shape[2] == 4:
        return cv2.cvtColor(frame_bgr, cv2.COLOR_BGRA2RGB if rgb else cv2.COLOR_BGRA2BGR)
    return cv2.cvtColor(frame_bgr, cv2.COLOR_BGR2RGB) if rgb else frame_bgr


def _as_uint8(frame: np.ndarray) -> np.ndarray:
    """8-bit frame (some codecs decode to 16 bits per channel)."""
    if frame.dtype == np.uint8:
        return frame
    if frame.dtype == np.uint16:
        return (frame >> 8).astype(np.uint8)
    return np.clip(frame, 0, 255).astype(np.uint8)


def _output_count(output_index: int, source_index: int, step: float, is_last: bool) -> int:
    """How many output frames, from `output_index` on, show source frame `source_index`.

    Output frame k shows the source frame nearest to its time k / target_fps, that is
    source index floor(k * step + 1/2) with step = source_fps / target_fps; output times
    before the end of the video (k * step < frame count) past the last frame show the
    last frame. 0 means the source frame is dropped.
    """
    count = 0
    if is_last:
        while (output_index + count) * step < source_index + 1:
            count += 1
        return count
    while math.floor((output_index + count) * step + 0.5) == source_index:
        count += 1
    return count


def iter_video_frames(
    path: os.PathLike | str,
    frame_size: FrameSize | None = None,
    fps: float | None = None,
    channel_order: str = "rgb",
) -> Iterator[np.ndarray]:
    """uint8 frames [H, W, 3] of a video, one at a time (RGB unless channel_order="bgr").

    frame_size: how to resize (None: the original size).
    fps: resample to this rate: frame k is the source frame nearest to time k / fps,
        so a lower rate drops frames and a higher rate only duplicates them (None: every
        decoded frame).
    channel_order: "rgb", or "bgr" for OpenCV's own order (what cv2.imencode takes; it
        saves two colour conversions per frame when frames are only re-encoded).
    Raises VideoReadError with reason "missing", "empty-file" or "undecodable" (the file
    cannot be opened or yields no frame). A truncated file yields the frames that decode.
    """
    if fps is not None and not (math.isfinite(fps) and fps > 0):
        raise ConfigError(f"frame rate {fps!r} is not valid; give a positive number of frames/s.")
    if channel_order not in ("rgb", "bgr"):
        raise ValueError(f'channel_order must be "rgb" or "bgr", not {channel_order!r}')
    video_path = _checked_path(path)
    capture = _opened_capture(video_path)
    step = None
    if fps is not None:
        source_fps = _declared_fps(capture)
        if source_fps == 0.0:
            capture.release()
            raise VideoReadError(
                video_path,
                "undecodable",
                f"the container declares no frame rate, so it cannot be resampled to "
                f"{fps:g} frames/s; prepare it without a target frame rate",
            )
        step = source_fps / fps
    ok, first_frame = capture.read()
    if not ok or first_frame is None:
        capture.release()
        raise VideoReadError(video_path, "undecodable", "the video yields no frame")
    return _decoded_frames(capture, first_frame, frame_size, step, channel_order)


def _decoded_frames(
    capture: cv2.VideoCapture,
    first_frame: np.ndarray,
    frame_size: FrameSize | None,
    step: float | None,
    channel_order: str,
) -> Iterator[np.ndarray]:
    """Frames [H, W, 3] of an opened capture, from its decoded first frame (BGR).

    step: source frames per output frame (None: every frame once). Decodes one frame
    ahead, to know which frame is the last. The capture is released at the end, or
    when the iterator is closed.
    """
    try:
        frame = first_frame
        source_index = output_index = 0
        while frame is not None:
            ok, next_frame = capture.read()
            if not ok:
                next_frame = None
            count = 1
            if step is not None:
                count = _output_count(output_index, source_index, step, next_frame is None)
            if count > 0:
                output = _three_channel_frame(
                    resize_frame(_as_uint8(frame), frame_size), channel_order
                )
                yield output
                for _ in range(count - 1):
                    yield output.copy()
            output_index += count
            source_index += 1
            frame = next_frame
    finally:
        capture.release()


def read_video_frames(
    path: os.PathLike | str,
    frame_size: FrameSize | None = None,
    fps: float | None = None,
) -> np.ndarray:
    """All frames of a video as one array [T, H, W, 3] uint8 (see iter_video_frames)."""
    return np.stack(list(iter_video_frames(path, frame_size, fps)))
