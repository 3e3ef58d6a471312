"""Annotated videos (`actrec predict --annotate OUT`): each frame of the source with the
prediction that covers it drawn on it (actrec.predict.annotation), written by
cv2.VideoWriter at the source's frame rate and size.

    whole video (predict VIDEO)   every frame: the video's top-k
    --timeline                    every frame: the top-k of the window whose centre is
                                  nearest the frame's (timeline.covering_windows)
    --stream                      every frame read: the running top-k after the last fed
                                  frame (built by the command from stream_predict)

The video is written under a temporary name beside OUT and renamed when complete
(actrec.files.atomic): OUT is never a half-written file. OUT's folder must exist.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import cv2
import numpy as np

from actrec.data.format.video import iter_video_frames, probe_video
from actrec.errors import OutputError
from actrec.files.atomic import commit_temporary
from actrec.predict.annotation import annotated_frame
from actrec.predict.annotation_output import ANNOTATION_CODECS
from actrec.predict.timeline import Timeline, covering_windows
from actrec.progress import NullProgress, Progress

DEFAULT_FPS = 25.0
"""The rate an annotated video is written at when its source declares none (a camera)."""


def _temporary(path: Path) -> Path:
    """The name the video is written under: hidden, beside `path`, with its suffix (OpenCV
    chooses the container by the suffix)."""
    return path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")


def _opened_writer(path: Path, temporary: Path, fps: float, shape) -> cv2.VideoWriter:
    codec = ANNOTATION_CODECS[path.suffix.lower()]
    height, width = shape[:2]
    writer = cv2.VideoWriter(
        str(temporary), cv2.VideoWriter_fourcc(*codec), fps, (int(width), int(height))
    )
    if not writer.isOpened():
        raise OutputError(
            f"OpenCV cannot write {path} ({codec!r} at {width}x{height}); try another suffix "
            f"({', '.join(ANNOTATION_CODECS)}) or folder"
        )
    return writer


def write_video_atomic(
    path: Path | str,
    frames: Iterable[np.ndarray],
    fps: float,
    progress: Progress | None = None,
    total: int | None = None,
    keep_on_interrupt: bool = False,
) -> tuple[int, bool]:
    """Writes BGR uint8 frames [H, W, 3] (all of the first's size) to `path` at `fps`;
    returns (frames written, whether a KeyboardInterrupt ended them). keep_on_interrupt:
    Ctrl+C ends the video (a camera has no end) and what came is written; else nothing
    is. OutputError when no frame came or OpenCV cannot write the file."""
    path = Path(path)
    progress = progress or NullProgress()
    temporary = _temporary(path)
    writer, count, interrupted = None, 0, False
    progress.start(f"annotate {path.name}", total)
    try:
        try:
            for frame in frames:
                if writer is None:
                    writer = _opened_writer(path, temporary, fps or DEFAULT_FPS, frame.shape)
                writer.write(np.ascontiguousarray(frame))
                count += 1
                progress.advance(1)
        except KeyboardInterrupt:
            if not keep_on_interrupt or writer is None:
                raise
            interrupted = True
        finally:
            progress.finish()
        if writer is None:
            raise OutputError(f"{path}: no frame to write; nothing was written")
        writer.release()
        writer = None
        commit_temporary(temporary, path)
    finally:
        if writer is not None:
            writer.release()
        temporary.unlink(missing_ok=True)
    return count, interrupted


def video_rate_and_length(path: Path | str) -> tuple[float, int | None]:
    """(frames per second, DEFAULT_FPS when undeclared; frame count, None when undeclared)
    of a video file, as its container declares them."""
    info = probe_video(path)
    return (info.fps if info.fps > 0 else DEFAULT_FPS), (
        info.frame_count if info.frame_count > 0 else None
    )


def clip_annotated_frames(
    path: Path | str, top_k: Sequence[tuple[str, float]], classes: Sequence[str]
) -> Iterator[np.ndarray]:
    """Every frame of the video at its own size, with the whole video's top-k drawn."""
    for frame in iter_video_frames(path, None, None, channel_order="bgr"):
        yield annotated_frame(frame, top_k, classes)


def timeline_annotated_frames(
    path: Path | str, timeline: Timeline, classes: Sequence[str]
) -> Iterator[np.ndarray]:
    """Every frame of the video at its own size, with the top-k of the window that covers
    it (its time: the middle of the frame, at the video's own rate) and the window's span."""
    fps, _ = video_rate_and_length(path)
    windows = timeline.windows
    for index, frame in enumerate(iter_video_frames(path, None, None, channel_order="bgr")):
        window = windows[covering_windows(windows, np.array([(index + 0.5) / fps]))[0]]
        caption = f"{window.start:.2f}-{window.end:.2f} s"
        yield annotated_frame(frame, window.top_k, classes, caption)
