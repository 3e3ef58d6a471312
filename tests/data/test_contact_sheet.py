"""The contact sheet's flow colours and its key agree: a motion drawn in a tile has the
colour the key's wheel shows for that direction, on the same brightness scale."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from actrec.data.maintenance.contact_sheet import (
    BLOCK_GAP,
    HEADER_HEIGHT,
    KEY_HEIGHT,
    KEY_WHEEL_RADIUS,
    TILE_HEIGHT,
    ContactVideo,
    contact_sheet_image,
    flow_key_wheel,
    sheet_flow_scale,
)

DIRECTIONS = {"right": (1.0, 0.0), "down": (0.0, 1.0), "left": (-1.0, 0.0), "up": (0.0, -1.0)}


def _uniform_motion(dx: float, dy: float, size: int = 48) -> np.ndarray:
    """A moving square on a still background: flow float32 [size, size, 2]."""
    flow = np.zeros((size, size, 2), np.float32)
    flow[12:36, 12:36] = (dx, dy)
    return flow


def _video(name: str, speed: float) -> ContactVideo:
    dx, dy = DIRECTIONS[name]
    frame = np.full((48, 48, 3), 128, np.uint8)
    return ContactVideo(name, f"v_{name}", [frame], [_uniform_motion(speed * dx, speed * dy)])


def test_each_direction_is_drawn_in_the_colour_the_key_gives_it():
    videos = [_video(name, speed=3.0) for name in DIRECTIONS]
    sheet = contact_sheet_image(videos)
    block_height = HEADER_HEIGHT + 2 * TILE_HEIGHT + BLOCK_GAP
    assert sheet.shape[0] == len(videos) * block_height + KEY_HEIGHT + BLOCK_GAP
    scale = sheet_flow_scale(videos)
    assert scale == pytest.approx(3.0)
    wheel = flow_key_wheel(scale)
    centre = KEY_WHEEL_RADIUS
    for index, name in enumerate(DIRECTIONS):
        top = index * block_height + HEADER_HEIGHT + TILE_HEIGHT  # the flow row
        tile = sheet[top : top + TILE_HEIGHT, :TILE_HEIGHT]
        moving = tile[TILE_HEIGHT // 2, TILE_HEIGHT // 2]  # inside the square
        dx, dy = DIRECTIONS[name]
        on_key = wheel[centre + round(dy * KEY_WHEEL_RADIUS), centre + round(dx * KEY_WHEEL_RADIUS)]
        np.testing.assert_allclose(moving.astype(int), on_key.astype(int), atol=12, err_msg=name)
        assert tile[2, 2].max() == 0  # still background: black
    # The key is drawn under the videos, its wheel included.
    key = sheet[len(videos) * block_height :]
    assert (key == wheel[centre, -1]).all(axis=-1).any()


def test_the_wheel_is_dark_at_rest_and_bright_at_the_full_scale_speed():
    wheel = flow_key_wheel(5.0)
    hsv = cv2.cvtColor(wheel, cv2.COLOR_RGB2HSV)
    centre = KEY_WHEEL_RADIUS
    assert hsv[centre, centre, 2] == 0
    assert hsv[centre, -1, 2] == 255 and hsv[centre, centre + KEY_WHEEL_RADIUS // 2, 2] in (
        127,
        128,
    )


def test_rgb_only_sheets_have_no_key():
    frame = np.full((48, 64, 3), 200, np.uint8)
    sheet = contact_sheet_image([ContactVideo("a", "v_a", [frame, frame])])
    assert sheet.shape[0] == HEADER_HEIGHT + TILE_HEIGHT + BLOCK_GAP
