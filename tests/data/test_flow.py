"""Optical flow estimation, quantisation and visualisation (actrec.data.format.flow)."""

from __future__ import annotations

import itertools

import cv2
import numpy as np
import pytest

from actrec.data.format import flow as flow_module
from actrec.data.format.flow import (
    FLOW_BOUND,
    available_flow_methods,
    create_flow_estimator,
    dequantize_flow,
    dis_finest_scale,
    flow_to_color,
    grey,
    quantize_flow,
    quantize_flow_planes,
)
from actrec.data.format.flow_methods import FLOW_METHODS
from actrec.data.format.video import iter_video_frames
from actrec.data.synthetic.render import render_translation_clip
from actrec.data.synthetic.video_writer import write_video
from actrec.errors import ConfigError

BORDER = 16  # pixels left out of the mean: occlusion and pyramid border effects
TOLERANCE = 0.5  # px, mean dequantised flow against the rendered motion


def decoded_translation_frames(tmp_path, dx: float, dy: float) -> list[np.ndarray]:
    """Grey uint8 [H, W] frames of a texture moving (dx, dy) px/frame, through a video file."""
    path = tmp_path / "translation.avi"
    write_video(path, render_translation_clip(dx, dy, 5, 192, 144, seed=3), fps=25.0)
    return [grey(frame) for frame in iter_video_frames(path)]


def interior_mean(flow: np.ndarray) -> np.ndarray:
    """(mean dx, mean dy) of flow [H, W, 2] without a BORDER-pixel frame."""
    return flow[BORDER:-BORDER, BORDER:-BORDER].reshape(-1, 2).mean(axis=0)


@pytest.mark.parametrize("method", ["dis", "farneback"])
@pytest.mark.parametrize(
    ("dx", "dy"), [(2.0, 0.0), (-1.5, 3.0), (0.0, -4.0), (0.25, -0.75), (-6.5, 5.5)]
)
def test_dequantised_flow_recovers_a_known_translation(tmp_path, method, dx, dy):
    frames = decoded_translation_frames(tmp_path, dx, dy)
    assert len(frames) == 5
    estimate = create_flow_estimator(method)
    for previous, following in itertools.pairwise(frames):
        flow = estimate(previous, following)
        assert flow.dtype == np.float32 and flow.shape == (*previous.shape, 2)
        stored = dequantize_flow(quantize_flow(flow))
        error = np.abs(interior_mean(stored) - (dx, dy))
        assert error.max() <= TOLERANCE, f"{method} ({dx}, {dy}): mean error {error} px"


def test_flow_of_a_static_pair_is_near_zero():
    frame = grey(render_translation_clip(0.0, 0.0, 1, 96, 64)[0])
    for method in ("dis", "farneback"):
        flow = create_flow_estimator(method)(frame, frame)
        assert np.abs(flow).max() < 0.1


def test_estimators_check_their_inputs():
    estimate = create_flow_estimator("dis")
    frame = np.zeros((32, 32), np.uint8)
    with pytest.raises(ValueError, match="size"):
        estimate(frame, np.zeros((32, 40), np.uint8))
    with pytest.raises(ValueError, match="greyscale"):
        estimate(np.zeros((32, 32, 3), np.uint8), frame)


def test_dis_uses_a_finer_pyramid_level_on_small_frames():
    assert dis_finest_scale(256, 340, 2) == 2  # the FAST preset as is at 340x256
    assert dis_finest_scale(240, 320, 2) == 2
    assert dis_finest_scale(96, 128, 2) == 1
    assert dis_finest_scale(40, 40, 2) == 0
    assert dis_finest_scale(1080, 1920, 1) == 1  # never coarser than the preset


def test_one_dis_estimator_handles_changing_frame_sizes():
    estimate = create_flow_estimator("dis")
    for width, height in [(160, 120), (64, 48), (160, 120)]:
        clip = render_translation_clip(2.0, 0.0, 2, width, height, seed=1)
        flow = estimate(grey(clip[0]), grey(clip[1]))
        assert flow.shape == (height, width, 2)
        assert abs(float(np.median(flow[..., 0])) - 2.0) < 0.3


def test_every_registered_method_is_available_and_builds_an_estimator():
    """Over the registry (actrec.data.format.flow_methods): a method added there is built here
    or fails this test."""
    available = available_flow_methods()
    assert available == tuple(m for m in FLOW_METHODS if m != "tvl1" or hasattr(cv2, "optflow"))
    for method in available:
        estimate = create_flow_estimator(method)
        still = np.zeros((64, 64), np.uint8)
        assert estimate(still, still).shape == (64, 64, 2)


def test_unknown_method_lists_the_methods():
    with pytest.raises(ConfigError) as raised:
        create_flow_estimator("lucas-kanade")
    message = str(raised.value)
    assert "lucas-kanade" in message
    assert all(method in message for method in FLOW_METHODS)


def test_tvl1_without_contrib_says_what_to_install(monkeypatch):
    monkeypatch.setattr(flow_module, "_has_optflow", lambda: False)
    assert "tvl1" not in available_flow_methods()
    with pytest.raises(ConfigError) as raised:
        create_flow_estimator("tvl1")
    message = str(raised.value)
    assert "pip install opencv-contrib-python-headless" in message
    assert "opencv-python-headless" in message.replace("opencv-contrib-python-headless", "")


@pytest.mark.skipif(not hasattr(cv2, "optflow"), reason="cv2.optflow (opencv-contrib) absent")
def test_tvl1_when_contrib_is_installed():
    clip = render_translation_clip(2.0, -1.0, 2, 96, 72, seed=2)
    flow = create_flow_estimator("tvl1")(grey(clip[0]), grey(clip[1]))
    assert np.abs(interior_mean(flow) - (2.0, -1.0)).max() < TOLERANCE


# ----------------------------------------------------------------------------- quantisation


def test_no_motion_quantises_to_128_and_back_to_about_zero():
    zero = np.zeros((4, 5, 2), np.float32)
    quantized = quantize_flow(zero)
    assert quantized.dtype == np.uint8 and quantized.shape == (4, 5, 2)
    assert np.all(quantized == 128)
    assert np.all(np.abs(dequantize_flow(quantized)) <= FLOW_BOUND / 255 + 1e-6)


def test_bound_and_beyond_saturate():
    flow = np.array([[[FLOW_BOUND, -FLOW_BOUND], [100.0, -100.0], [np.inf, -np.inf]]])
    quantized = quantize_flow(flow)
    assert quantized[..., 0].tolist() == [[255, 255, 255]]
    assert quantized[..., 1].tolist() == [[0, 0, 0]]
    assert dequantize_flow(quantized)[0, 0].tolist() == [FLOW_BOUND, -FLOW_BOUND]


def design_formula(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(exact value, level) of docs/architecture.md §2's
    q = round(255 * (clip(v, -B, B) + B) / (2B)), B = 20, NaN as no motion. In float64 the
    value of a float32 v is exact (255 / 40 = 6.375 has 6 significant bits); ties round up."""
    exact = 255 * (np.clip(np.nan_to_num(values.astype(np.float64), nan=0.0), -20, 20) + 20) / 40
    return exact, np.floor(exact + 0.5)


def half_way_neighbourhoods() -> np.ndarray:
    """float32 values at and around the 255 points where the level changes, and the ties."""
    half_way = ((np.arange(255) + 0.5) * 40 / 255 - 20).astype(np.float32)
    steps = np.arange(-3, 4, dtype=np.float32)[:, None]  # up to 3 float32 steps either side
    around = half_way[None, :] + steps * np.spacing(half_way)[None, :]
    ties = np.float32([-16, -8, 0, 8, 16])  # where the exact value is k + 0.5
    return np.concatenate([around.ravel(), ties])


EDGE_VALUES = np.float32(
    [np.nan, np.inf, -np.inf, 3.4e38, -3.4e38, 1e30, -1e30, 20, -20, 0.0, -0.0, 1e-45, -1e-45,
     1e-30, -1e-30, np.nextafter(20, 0), np.nextafter(20, 40), np.nextafter(-20, 0),
     np.nextafter(-20, -40), 19.96, -19.96, 0.07843, -0.07843]
)  # fmt: skip


@pytest.mark.parametrize(
    "values",
    [
        np.random.default_rng(0).uniform(-25, 25, 1_000_000).astype(np.float32),
        np.random.default_rng(1).normal(0, 3, 500_000).astype(np.float32),
        np.random.default_rng(2).normal(0, 30, 500_000).astype(np.float32),
        half_way_neighbourhoods(),
        EDGE_VALUES,
    ],
    ids=["uniform", "normal-3px", "normal-30px", "half-way-points", "edges"],
)
def test_quantisation_is_the_design_formula(values):
    """Equal to the formula in exact arithmetic, except within 1e-4 of a half-way point
    k + 0.5, where single precision may give the other neighbour (the former numpy code
    too): one value in ~10^5 of random ones."""
    flow = values.reshape(-1, 1, 2) if values.size % 2 == 0 else values.reshape(-1, 1, 1)
    levels = quantize_flow(flow).ravel().astype(np.float64)
    exact, expected = design_formula(values)
    near_half_way = np.abs(exact - np.floor(exact) - 0.5) < 1e-4
    assert np.array_equal(levels[~near_half_way], expected[~near_half_way])
    assert np.all(np.abs(levels - exact)[near_half_way] <= 0.5 + 1e-4)
    if values.size > 100_000:
        assert np.count_nonzero(levels != expected) < 5e-5 * values.size


def test_quantisation_of_the_values_that_are_not_numbers():
    flow = np.float32([[[np.nan, np.inf], [-np.inf, np.nan]]])  # [1, 2, 2]
    assert quantize_flow(flow).tolist() == [[[128, 255], [0, 128]]]
    assert np.isnan(flow[0, 0, 0])  # the input is left as it was


def test_quantisation_takes_any_layout_and_float_type():
    flow = np.random.default_rng(3).normal(0, 8, (48, 64, 2)).astype(np.float32)
    levels = quantize_flow(flow)
    assert levels.shape == (48, 64, 2) and levels.dtype == np.uint8
    assert np.array_equal(quantize_flow(flow.astype(np.float64)), levels)
    assert np.array_equal(quantize_flow(flow[:, ::2]), levels[:, ::2])  # a strided view
    assert np.array_equal(quantize_flow(flow[..., 0]), levels[..., 0])  # one plane [H, W]
    assert np.array_equal(quantize_flow(flow.ravel()), levels.ravel())
    assert quantize_flow(np.zeros((0, 5, 2), np.float32)).shape == (0, 5, 2)


def test_planes_are_the_quantised_components_and_overwrite_only_when_asked():
    flow = np.random.default_rng(4).normal(0, 12, (48, 64, 2)).astype(np.float32)
    flow[0, 0] = (np.nan, np.inf)
    original = flow.copy()
    expected = quantize_flow(flow)
    x_plane, y_plane = quantize_flow_planes(flow)
    assert np.array_equal(flow, original, equal_nan=True)  # left as it was
    for plane, component in ((x_plane, 0), (y_plane, 1)):
        assert plane.flags.c_contiguous and plane.shape == (48, 64)
        assert np.array_equal(plane, expected[..., component])
    overwritten = quantize_flow_planes(flow, overwrite=True)
    overwritten_x, overwritten_y = overwritten
    assert np.array_equal(overwritten_x, x_plane) and np.array_equal(overwritten_y, y_plane)
    assert np.abs(flow).max() == FLOW_BOUND  # clipped in place
    with pytest.raises(ValueError, match=r"\[H, W, 2\]"):
        quantize_flow_planes(flow[..., 0])


def test_round_trip_error_is_at_most_half_a_step():
    rng = np.random.default_rng(0)
    flow = rng.uniform(-FLOW_BOUND, FLOW_BOUND, (64, 64, 2)).astype(np.float32)
    restored = dequantize_flow(quantize_flow(flow))
    assert restored.dtype == np.float32
    assert np.abs(restored - flow).max() <= FLOW_BOUND / 255 + 1e-5


def test_other_bounds_and_invalid_bounds():
    flow = np.full((2, 2, 2), 4.0, np.float32)
    assert np.all(quantize_flow(flow, bound=4.0) == 255)
    assert np.allclose(dequantize_flow(quantize_flow(flow * 0.5, 4.0), 4.0), 2.0, atol=4 / 255)
    with pytest.raises(ConfigError):
        quantize_flow(flow, bound=0.0)


def test_nan_counts_as_no_motion():
    assert np.all(quantize_flow(np.full((1, 1, 2), np.nan, np.float32)) == 128)


# ----------------------------------------------------------------------------- display


def test_flow_to_color_directions_and_magnitude():
    flow = np.zeros((1, 4, 2), np.float32)
    flow[0, 1] = (5.0, 0.0)  # right: hue 0, red
    flow[0, 2] = (0.0, 5.0)  # down (y grows): hue 90 degrees, yellow-green
    flow[0, 3] = (2.5, 0.0)  # half the magnitude: half the brightness
    picture = flow_to_color(flow)
    assert picture.dtype == np.uint8 and picture.shape == (1, 4, 3)
    assert picture[0, 0].tolist() == [0, 0, 0]
    assert picture[0, 1].tolist() == [255, 0, 0]
    red, green, blue = picture[0, 2].tolist()
    assert green == 255 and 100 < red < 155 and blue == 0
    assert abs(int(picture[0, 3, 0]) - 127) <= 1
    assert flow_to_color(flow, max_magnitude=10.0)[0, 1].tolist() == [127, 0, 0]


def test_flow_to_color_of_no_motion_is_black():
    assert not flow_to_color(np.zeros((3, 3, 2), np.float32)).any()


def test_grey():
    frame = np.zeros((6, 8, 3), np.uint8)
    frame[..., 1] = 200
    luminance = grey(frame)
    assert luminance.shape == (6, 8) and luminance.dtype == np.uint8
    assert abs(int(luminance[0, 0]) - round(0.587 * 200)) <= 1
    assert grey(luminance) is luminance
