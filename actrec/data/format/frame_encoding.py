"""One video file to the JPEG lists of its record: decode, resize, flow, quantise, encode.

Per frame: one decode (BGR), one resize, one JPEG of the frame, one grey conversion (used
by the flow pair before and the pair after), and per consecutive pair one flow estimate,
one quantisation and two greyscale JPEGs (x and y). Frames stay in OpenCV's BGR order
from decoder to encoder, so no colour conversion is spent on them.

This runs inside the preparation worker processes and must stay TensorFlow-free.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

import cv2
import numpy as np

from actrec.data.format.flow import FlowEstimator, quantize_flow_planes
from actrec.data.format.frame_folder import iter_frames
from actrec.data.format.video import FrameSize


@dataclass
class VideoJpegs:
    """What the record writer stores of one video.

    rgb: one colour JPEG per frame.
    flow_x, flow_y: one greyscale JPEG per consecutive frame pair (quantised flow, 128 =
        no motion); empty without flow.
    height, width: the frame size (0 when no frame was decoded).
    """

    rgb: list[bytes] = field(default_factory=list)
    flow_x: list[bytes] = field(default_factory=list)
    flow_y: list[bytes] = field(default_factory=list)
    height: int = 0
    width: int = 0


def jpeg_bytes(image: np.ndarray, quality: int) -> bytes:
    """JPEG bytes of a grey uint8 [H, W] or BGR uint8 [H, W, 3] image."""
    ok, encoded = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise RuntimeError("OpenCV could not JPEG-encode a frame")
    return encoded.tobytes()


@dataclass(frozen=True)
class FrameJpegs:
    """One frame's JPEGs: `rgb` (None when not asked for), and `flow_x`, `flow_y` of the flow
    from the previous frame to this one (None for the first frame, or without flow)."""

    rgb: bytes | None
    flow_x: bytes | None
    flow_y: bytes | None
    height: int
    width: int


def iter_frame_jpegs(
    path: os.PathLike | str,
    frame_size: FrameSize,
    fps: float | None,
    estimate_flow: FlowEstimator | None,
    jpeg_quality: int,
    with_rgb: bool = True,
) -> Iterator[FrameJpegs]:
    """The JPEGs of the video at `path`, one frame at a time (what its record stores, in
    order), with flow from `estimate_flow` (None: RGB only). Holds one frame and the
    previous frame's grey image, whatever the video's length.

    Raises what iter_video_frames raises (VideoReadError for an unusable file); a corrupt
    file can also make the decoder fail in other ways.
    """
    previous_grey = None
    for frame in iter_frames(path, frame_size, fps, channel_order="bgr"):  # [H, W, 3]
        rgb = jpeg_bytes(frame, jpeg_quality) if with_rgb else None
        flow_x = flow_y = None
        if estimate_flow is not None:
            current_grey = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)  # [H, W]
            if previous_grey is not None:
                flow = estimate_flow(previous_grey, current_grey)  # float32 [H, W, 2]
                x_plane, y_plane = quantize_flow_planes(flow, overwrite=True)  # uint8 [H, W]
                flow_x = jpeg_bytes(x_plane, jpeg_quality)
                flow_y = jpeg_bytes(y_plane, jpeg_quality)
            previous_grey = current_grey
        yield FrameJpegs(rgb, flow_x, flow_y, *frame.shape[:2])


def encode_video_jpegs(
    path: os.PathLike | str,
    frame_size: FrameSize,
    fps: float | None,
    estimate_flow: FlowEstimator | None,
    jpeg_quality: int,
) -> VideoJpegs:
    """The JPEG lists of the video at `path`, with flow from `estimate_flow` (None: RGB
    only; actrec.data.format.flow.create_flow_estimator makes one).

    Raises what iter_video_frames raises (VideoReadError for an unusable file); a corrupt
    file can also make the decoder fail in other ways.
    """
    jpegs = VideoJpegs()
    for frame in iter_frame_jpegs(path, frame_size, fps, estimate_flow, jpeg_quality):
        jpegs.height, jpegs.width = frame.height, frame.width
        jpegs.rgb.append(frame.rgb)
        if frame.flow_x is not None:
            jpegs.flow_x.append(frame.flow_x)
            jpegs.flow_y.append(frame.flow_y)
    return jpegs
