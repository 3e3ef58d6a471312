"""A long video's predicted class over time, as a PNG strip (`predict --timeline --annotate`).

    STRIP_WIDTH pixels wide; from the top:
      band    BAND_HEIGHT px: each column the colour of the top-1 class of the window that
              covers its time (timeline.covering_windows), the video's start at the left,
              its last window's end at the right
      axis    AXIS_HEIGHT px: ticks and labels in seconds
      legend  LEGEND_ROW_HEIGHT px per class that is some window's top-1, in order of first
              appearance: a swatch in its colour and its name

    height = BAND_HEIGHT + AXIS_HEIGHT + LEGEND_ROW_HEIGHT x classes shown

The colours are the annotated video's (annotation.class_colour: by the class's index among
the model's classes).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np

from actrec.files.atomic import write_bytes_atomic
from actrec.predict.annotation import FONT, class_colour
from actrec.predict.timeline import Timeline, covering_windows

STRIP_WIDTH = 960
BAND_HEIGHT = 40
AXIS_HEIGHT = 24
LEGEND_ROW_HEIGHT = 22
_BACKGROUND = (255, 255, 255)
_INK = (0, 0, 0)
_TICK_STEPS = (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600)


def shown_classes(timeline: Timeline) -> list[str]:
    """The classes that are some window's top-1, in order of first appearance."""
    return list(dict.fromkeys(window.top_k[0][0] for window in timeline.windows))


def strip_height(num_classes: int) -> int:
    """The strip's height in pixels with `num_classes` legend rows."""
    return BAND_HEIGHT + AXIS_HEIGHT + LEGEND_ROW_HEIGHT * num_classes


def _tick_step(duration: float) -> float:
    """The smallest of _TICK_STEPS giving at most 10 ticks over `duration` seconds."""
    return next((step for step in _TICK_STEPS if duration / step <= 10), _TICK_STEPS[-1])


def _draw_axis(image: np.ndarray, duration: float) -> None:
    step = _tick_step(duration)
    top = BAND_HEIGHT
    for tick in np.arange(0.0, duration + 1e-9, step):
        x = min(STRIP_WIDTH - 1, round(tick / duration * STRIP_WIDTH))
        cv2.line(image, (x, top), (x, top + 5), _INK, 1)
        label = f"{tick:g} s"
        (width, _), _ = cv2.getTextSize(label, FONT, 0.4, 1)
        if x + 2 + width < STRIP_WIDTH:
            cv2.putText(image, label, (x + 2, top + 17), FONT, 0.4, _INK, 1, cv2.LINE_AA)


def _draw_legend(image: np.ndarray, names: Sequence[str], colour_index: dict[str, int]) -> None:
    for row, name in enumerate(names):
        top = BAND_HEIGHT + AXIS_HEIGHT + row * LEGEND_ROW_HEIGHT
        colour = class_colour(colour_index[name])
        cv2.rectangle(image, (8, top + 4), (21, top + 17), colour, thickness=cv2.FILLED)
        cv2.putText(image, name, (28, top + 16), FONT, 0.5, _INK, 1, cv2.LINE_AA)


def timeline_strip(timeline: Timeline, classes: Sequence[str]) -> np.ndarray:
    """The strip of a usable timeline (see the module): BGR uint8 [strip_height(n),
    STRIP_WIDTH, 3]; `classes`: the model's classes, whose order gives the colours."""
    colour_index = {name: index for index, name in enumerate(classes)}
    names = shown_classes(timeline)
    image = np.empty((strip_height(len(names)), STRIP_WIDTH, 3), np.uint8)
    image[:] = _BACKGROUND
    duration = timeline.windows[-1].end
    times = (np.arange(STRIP_WIDTH) + 0.5) / STRIP_WIDTH * duration  # [STRIP_WIDTH]
    window_colours = np.array(
        [class_colour(colour_index[window.top_k[0][0]]) for window in timeline.windows],
        np.uint8,
    )  # [windows, 3]
    image[:BAND_HEIGHT] = window_colours[covering_windows(timeline.windows, times)][None]
    _draw_axis(image, duration)
    _draw_legend(image, names, colour_index)
    return image


def write_timeline_strip(path: Path | str, timeline: Timeline, classes: Sequence[str]) -> None:
    """Writes timeline_strip as a PNG file, atomically; its folder must exist."""
    ok, encoded = cv2.imencode(".png", timeline_strip(timeline, classes))
    if not ok:
        raise ValueError(f"OpenCV could not encode the strip for {path}")
    write_bytes_atomic(path, encoded.tobytes())
