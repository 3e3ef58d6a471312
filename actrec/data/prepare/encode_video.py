"""One video to its serialised records: decode, resize, JPEG-encode, optical flow.

This runs inside the preparation worker processes and must stay TensorFlow-free.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import cv2

from actrec.data.format.flow import create_flow_estimator
from actrec.data.format.frame_encoding import encode_video_jpegs
from actrec.data.format.shards import VideoRecord, encode_video_records, records_digest
from actrec.data.format.video import FrameSize
from actrec.errors import VideoReadError


@dataclass(frozen=True)
class PrepareSettings:
    """How videos are turned into records; recorded in the manifest, checked on resume.

    frame_size: FrameSize.parse text ("256", "340x256", "original").
    fps: resample to this rate (None keeps the source rate).
    flow: a method of actrec.data.format.flow_methods.FLOW_METHODS ("dis", "dis-medium",
        "farneback", "tvl1") or "none".
    jpeg_quality: 1-100 for RGB frames and flow images.
    min_frames: videos with fewer decoded frames are skipped as too short.
    shard_size_mb: a shard is closed once it holds at least this many MB of records.
    """

    frame_size: str = "256"
    fps: float | None = None
    flow: str = "dis"
    jpeg_quality: int = 90
    min_frames: int = 8
    shard_size_mb: float = 150.0

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class VideoTask:
    """One video to encode; `position` is its index in the split's sorted list."""

    position: int
    video_id: str
    path: str
    label: int
    label_text: str
    split: str


@dataclass(frozen=True)
class VideoResult:
    """What a worker returns. `records` (the video's serialised records, header first:
    actrec.data.format.shards) is None when the video was skipped (see `reason`)."""

    position: int
    video_id: str
    split: str
    label: int
    path: str
    records: tuple[bytes, ...] | None
    num_frames: int
    reason: str = ""
    detail: str = ""
    height: int = 0
    width: int = 0

    @classmethod
    def skipped(cls, task: VideoTask, reason: str, detail: str, num_frames: int = 0):
        """The result of a video that yields no record (see VideoReadError's reasons)."""
        return cls(
            task.position,
            task.video_id,
            task.split,
            task.label,
            task.path,
            None,
            num_frames,
            reason,
            detail,
        )

    @property
    def digest(self) -> str:
        return records_digest(self.records) if self.records is not None else ""


def initialise_worker() -> None:
    """Per-process set-up: one OpenCV thread per worker; parallelism comes from processes."""
    cv2.setNumThreads(1)


def encode_video(task: VideoTask, settings: PrepareSettings) -> VideoResult:
    """Decode `task.path` and build its record; never raises for a bad video (skips it)."""

    estimate_flow = None if settings.flow == "none" else create_flow_estimator(settings.flow)
    try:
        jpegs = encode_video_jpegs(
            Path(task.path),
            FrameSize.parse(settings.frame_size),
            settings.fps,
            estimate_flow,
            settings.jpeg_quality,
        )
    except VideoReadError as error:
        return VideoResult.skipped(task, error.reason, error.detail)
    except Exception as error:  # a corrupt file can make a decoder fail in any way
        return VideoResult.skipped(
            task, "undecodable", f"decoding failed: {type(error).__name__}: {error}"
        )
    rgb_jpegs, height, width = jpegs.rgb, jpegs.height, jpegs.width
    flow_x_jpegs, flow_y_jpegs = jpegs.flow_x, jpegs.flow_y
    if len(rgb_jpegs) < settings.min_frames:
        return VideoResult.skipped(
            task,
            "too-short",
            f"{len(rgb_jpegs)} frames decoded, fewer than --min-frames {settings.min_frames}",
            len(rgb_jpegs),
        )
    records = encode_video_records(
        VideoRecord(
            video_id=task.video_id,
            label=task.label,
            label_text=task.label_text,
            height=height,
            width=width,
            rgb_jpegs=rgb_jpegs,
            flow_x_jpegs=flow_x_jpegs,
            flow_y_jpegs=flow_y_jpegs,
        )
    )
    return VideoResult(
        task.position,
        task.video_id,
        task.split,
        task.label,
        task.path,
        records,
        len(rgb_jpegs),
        height=height,
        width=width,
    )
