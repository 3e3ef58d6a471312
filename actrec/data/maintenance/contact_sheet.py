"""The contact sheet of `actrec inspect`: one block per video (a header, RGB frames, their
colour-coded optical flow) and a key that says how to read the flow colours.

Every flow tile and the key share one colour scale: hue is the direction of motion (the
key's wheel shows which), brightness the speed, from black (still) to full brightness at
`max_magnitude` pixels per frame, the 99th percentile of the speeds on the sheet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import cv2
import numpy as np

from actrec.data.format.flow import flow_to_color

TILE_HEIGHT = 96
HEADER_HEIGHT = 22
BLOCK_GAP = 4
KEY_HEIGHT = 120
KEY_WHEEL_RADIUS = 44
SPEED_PERCENTILE = 99.0
_FONT = cv2.FONT_HERSHEY_SIMPLEX


@dataclass(frozen=True)
class ContactVideo:
    """One video's row of the sheet.

    rgb_frames: RGB uint8 [H, W, 3] each; flow_fields: flow in pixels, float32 [H, W, 2]
    each (x right, y down), one per RGB frame, or empty without flow.
    """

    label: str
    video_id: str
    rgb_frames: Sequence[np.ndarray]
    flow_fields: Sequence[np.ndarray] = field(default_factory=tuple)


def _tile(image: np.ndarray) -> np.ndarray:
    """An RGB [H, W, 3] image resized to TILE_HEIGHT rows, keeping its aspect ratio."""
    height, width = image.shape[:2]
    return cv2.resize(image, (max(1, round(width * TILE_HEIGHT / height)), TILE_HEIGHT))


def _text(image: np.ndarray, text: str, origin: tuple[int, int], scale: float = 0.45) -> None:
    cv2.putText(image, text, origin, _FONT, scale, (0, 0, 0), 1, cv2.LINE_AA)


def sheet_flow_scale(videos: Sequence[ContactVideo]) -> float:
    """The speed (px per frame) drawn at full brightness: the SPEED_PERCENTILE-th percentile
    of the speeds of all flow on the sheet (1.0 when there is no motion)."""
    speeds = [
        np.hypot(flow[..., 0], flow[..., 1]).ravel() for v in videos for flow in v.flow_fields
    ]
    if not speeds:
        return 1.0
    scale = float(np.percentile(np.concatenate(speeds), SPEED_PERCENTILE))
    return scale if scale > 1e-3 else 1.0


def _video_block(video: ContactVideo, max_magnitude: float) -> np.ndarray:
    """Header over the RGB row over the flow row: RGB uint8 [22 + 96 (+ 96), W, 3]."""
    rows = [np.concatenate([_tile(frame) for frame in video.rgb_frames], axis=1)]
    if video.flow_fields:
        colours = [_tile(flow_to_color(flow, max_magnitude)) for flow in video.flow_fields]
        rows.append(np.concatenate(colours, axis=1))
    block = np.concatenate(rows, axis=0)
    header = np.full((HEADER_HEIGHT, block.shape[1], 3), 255, np.uint8)
    _text(header, f"{video.label}  {video.video_id}"[:80], (4, 16))
    return np.concatenate([header, block], axis=0)


def flow_key_wheel(max_magnitude: float, radius: int = KEY_WHEEL_RADIUS) -> np.ndarray:
    """The colour of every motion up to `max_magnitude`: RGB uint8 [2r+1, 2r+1, 3]; the pixel
    at (centre + d) shows the colour of a motion of d * max_magnitude / r pixels."""
    offsets = np.arange(-radius, radius + 1, dtype=np.float32)
    dx, dy = np.meshgrid(offsets, offsets)  # x right, y down, as image flow
    flow = np.stack([dx, dy], axis=-1) * np.float32(max_magnitude / radius)
    wheel = flow_to_color(flow, max_magnitude)
    wheel[np.hypot(dx, dy) > radius] = 255  # white outside the disc
    return wheel


def flow_key(max_magnitude: float, width: int) -> np.ndarray:
    """The key: the wheel with its directions named, and how to read it. RGB uint8
    [KEY_HEIGHT, max(width, 560), 3]."""
    key = np.full((KEY_HEIGHT, max(width, 560), 3), 255, np.uint8)
    wheel = flow_key_wheel(max_magnitude)
    size = wheel.shape[0]
    top, left = (KEY_HEIGHT - size) // 2, 48
    key[top : top + size, left : left + size] = wheel
    centre_x, centre_y = left + size // 2, top + size // 2
    _text(key, "right", (left + size + 4, centre_y + 4), 0.4)
    _text(key, "left", (left - 30, centre_y + 4), 0.4)
    _text(key, "up", (centre_x - 7, top - 3), 0.4)
    _text(key, "down", (centre_x - 15, top + size + 11), 0.4)
    lines = (
        "optical flow colour key",
        "colour: direction of motion (as on the wheel)",
        "brightness: speed, black = still,",
        f"full = {max_magnitude:.2f} px per frame or more",
    )
    for row, line in enumerate(lines):
        _text(key, line, (left + size + 60, 30 + 22 * row))
    return key


def contact_sheet_image(videos: Sequence[ContactVideo]) -> np.ndarray:
    """The sheet: the videos' blocks one under the other, then the flow key when there is
    flow. RGB uint8 [H, W, 3]."""
    max_magnitude = sheet_flow_scale(videos)
    blocks = [_video_block(video, max_magnitude) for video in videos]
    if any(video.flow_fields for video in videos):
        blocks.append(flow_key(max_magnitude, max(block.shape[1] for block in blocks)))
    width = max(block.shape[1] for block in blocks)
    padded = [
        np.pad(block, ((0, BLOCK_GAP), (0, width - block.shape[1]), (0, 0)), constant_values=255)
        for block in blocks
    ]
    return np.concatenate(padded, axis=0)


def contact_sheet_png(videos: Sequence[ContactVideo]) -> bytes:
    """contact_sheet_image encoded as PNG."""
    ok, png = cv2.imencode(".png", cv2.cvtColor(contact_sheet_image(videos), cv2.COLOR_RGB2BGR))
    if not ok:
        raise RuntimeError("OpenCV could not encode the contact sheet")
    return png.tobytes()
