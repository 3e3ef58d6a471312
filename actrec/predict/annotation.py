"""The top-k drawn on a frame (`actrec predict --annotate`): a filled, semi-transparent box in
the top-left corner holding an optional caption (the time, the window) and one row per
class: a swatch in the class's colour, the probability and the class name.

    frame BGR uint8 [H, W, 3] + top-k (class, probability) -> a new frame, same shape

The text scales with the frame's height; the box is cut at the frame's edges. The class
colours are those of the timeline strip (actrec.predict.timeline_strip).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

BOX_COLOUR = (0, 0, 0)
"""The box's fill (BGR), blended with the frame at BOX_OPACITY."""
BOX_OPACITY = 0.6
TEXT_COLOUR = (255, 255, 255)
FONT = cv2.FONT_HERSHEY_SIMPLEX
_GOLDEN_RATIO = 0.6180339887498949


def class_colour(index: int) -> tuple[int, int, int]:
    """The BGR colour of class `index`: hues a golden ratio of the circle apart, so that
    neighbouring classes differ."""
    hue = int(((index * _GOLDEN_RATIO) % 1.0) * 180)  # OpenCV's hue range is 0-179
    pixel = cv2.cvtColor(np.array([[[hue, 200, 230]]], np.uint8), cv2.COLOR_HSV2BGR)[0, 0]
    return tuple(int(value) for value in pixel)


@dataclass(frozen=True)
class OverlayLayout:
    """Sizes in pixels of the overlay on a frame of a given height."""

    scale: float
    thickness: int
    text_height: int
    line_height: int
    padding: int
    margin: int

    @classmethod
    def for_height(cls, height: int) -> OverlayLayout:
        scale = float(np.clip(height / 480 * 0.6, 0.3, 1.2))
        thickness = 1 if scale < 0.8 else 2
        (_, text_height), baseline = cv2.getTextSize("Ag", FONT, scale, thickness)
        line_height = text_height + baseline + max(2, text_height // 3)
        padding = max(2, text_height // 2)
        return cls(scale, thickness, text_height, line_height, padding, max(2, padding))


def _rows(top_k: Sequence[tuple[str, float]], caption: str | None) -> list[tuple[str, str | None]]:
    """(text, class name or None for the caption) of each row, top to bottom."""
    rows = [(caption, None)] if caption else []
    return rows + [(f"{probability:.2f} {name}", name) for name, probability in top_k]


def overlay_rectangle(
    shape: Sequence[int], top_k: Sequence[tuple[str, float]], caption: str | None = None
) -> tuple[int, int, int, int]:
    """(x0, y0, x1, y1), end exclusive: the box annotated_frame draws on a frame of `shape`
    ([H, W, ...]), cut at the frame's edges."""
    height, width = shape[:2]
    layout = OverlayLayout.for_height(height)
    rows = _rows(top_k, caption)
    text_width = max(
        cv2.getTextSize(text, FONT, layout.scale, layout.thickness)[0][0] for text, _ in rows
    )
    swatch = layout.text_height + layout.padding
    x0 = y0 = layout.margin
    x1 = x0 + layout.padding + swatch + text_width + layout.padding
    y1 = y0 + 2 * layout.padding + len(rows) * layout.line_height
    return x0, y0, min(x1, width), min(y1, height)


def annotated_frame(
    frame: np.ndarray,
    top_k: Sequence[tuple[str, float]],
    classes: Sequence[str],
    caption: str | None = None,
) -> np.ndarray:
    """A copy of `frame` (BGR uint8 [H, W, 3]) with the top-k (class, probability) pairs,
    most probable first, drawn in a box (see the module); `classes`: the model's classes,
    whose order gives each its colour."""
    out = np.ascontiguousarray(frame).copy()
    x0, y0, x1, y1 = overlay_rectangle(out.shape, top_k, caption)
    region = out[y0:y1, x0:x1]
    fill = np.empty_like(region)
    fill[:] = BOX_COLOUR
    out[y0:y1, x0:x1] = cv2.addWeighted(fill, BOX_OPACITY, region, 1.0 - BOX_OPACITY, 0.0)
    layout = OverlayLayout.for_height(out.shape[0])
    colour_index = {name: index for index, name in enumerate(classes)}
    swatch = layout.text_height + layout.padding
    for row, (text, name) in enumerate(_rows(top_k, caption)):
        baseline = y0 + layout.padding + row * layout.line_height + layout.text_height
        text_x = x0 + layout.padding
        if name is not None:
            top_left = (text_x, baseline - layout.text_height)
            bottom_right = (text_x + layout.text_height - 1, baseline - 1)
            colour = class_colour(colour_index.get(name, 0))
            cv2.rectangle(out, top_left, bottom_right, colour, thickness=cv2.FILLED)
            text_x += swatch
        cv2.putText(
            out,
            text,
            (text_x, baseline),
            FONT,
            layout.scale,
            TEXT_COLOUR,
            layout.thickness,
            cv2.LINE_AA,
        )
    return out
