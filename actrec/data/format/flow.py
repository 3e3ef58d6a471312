"""Dense optical flow between consecutive frames, and its uint8 quantisation.

Methods: "dis" (OpenCV DIS with its FAST preset, the default), "dis-medium" (DIS with the
MEDIUM preset: more accurate, slower), "farneback", and "tvl1" (TV-L1, the flow of the TSN
papers) when OpenCV was built with the contrib module `cv2.optflow`. Their end-point error
and speed are measured by benchmarks/flow.py (table in docs/benchmarks.md).

Flow is stored TSN-style (docs/architecture.md §2): each component clipped to [-B, B] pixels and
mapped linearly to 0..255, q = round(255 * (clip(v, -B, B) + B) / (2B)), B = 20, so
128 means (almost) no motion.

This module must not import TensorFlow: it runs in the preparation worker processes.
"""

from __future__ import annotations

from collections.abc import Callable

import cv2
import numpy as np

from actrec.data.format.flow_methods import FLOW_METHODS
from actrec.errors import ConfigError

FLOW_BOUND = 20.0

# The OpenCV DIS preset of each DIS method.
DIS_PRESETS = {
    "dis": cv2.DISOPTICAL_FLOW_PRESET_FAST,
    "dis-medium": cv2.DISOPTICAL_FLOW_PRESET_MEDIUM,
}
# Smallest short side (px) of DIS's finest pyramid level; see dis_finest_scale.
DIS_MIN_FINEST_SIDE = 48

# Farneback parameters as commonly used for action recognition flow (OpenCV sample values).
FARNEBACK_PARAMETERS = {
    "pyr_scale": 0.5,
    "levels": 3,
    "winsize": 15,
    "iterations": 3,
    "poly_n": 5,
    "poly_sigma": 1.2,
    "flags": 0,
}

FlowEstimator = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _has_optflow() -> bool:
    return hasattr(cv2, "optflow") and hasattr(cv2.optflow, "DualTVL1OpticalFlow_create")


def available_flow_methods() -> tuple[str, ...]:
    """The flow methods this OpenCV build provides ("tvl1" only with cv2.optflow)."""
    return tuple(method for method in FLOW_METHODS if method != "tvl1" or _has_optflow())


def _checked_pair(previous_grey: np.ndarray, next_grey: np.ndarray) -> None:
    for name, image in (("previous", previous_grey), ("next", next_grey)):
        if image.ndim != 2 or image.dtype != np.uint8:
            raise ValueError(
                f"{name} frame must be greyscale uint8 [H, W]; got {image.dtype} {image.shape}"
            )
    if previous_grey.shape != next_grey.shape:
        raise ValueError(
            f"frames differ in size: previous {previous_grey.shape}, next {next_grey.shape}"
        )


def dis_finest_scale(height: int, width: int, preset_finest_scale: int) -> int:
    """The DIS pyramid level to stop at for frames of `height` x `width`.

    DIS presets fix the finest level (FAST: 2, i.e. flow computed at 1/4 size), tuned for
    frames of 256 px and more; on small frames that leaves too few pixels for a moving
    object, so stop early enough that the finest level keeps a short side of at least
    DIS_MIN_FINEST_SIDE pixels (256 px frames keep the preset's level 2).
    """
    scale = preset_finest_scale
    while scale > 0 and min(height, width) / 2**scale < DIS_MIN_FINEST_SIDE:
        scale -= 1
    return scale


def _dis_estimator(preset: int) -> FlowEstimator:
    """DIS flow; one OpenCV object per estimator (not shared between threads)."""
    dis = cv2.DISOpticalFlow_create(preset)
    preset_finest_scale = dis.getFinestScale()
    configured_shape: list[tuple[int, int]] = []

    def dis_flow(previous_grey: np.ndarray, next_grey: np.ndarray) -> np.ndarray:
        _checked_pair(previous_grey, next_grey)
        if configured_shape != [previous_grey.shape]:
            height, width = previous_grey.shape
            dis.setFinestScale(dis_finest_scale(height, width, preset_finest_scale))
            configured_shape[:] = [previous_grey.shape]
        return dis.calc(previous_grey, next_grey, None).astype(np.float32, copy=False)

    return dis_flow


def _farneback_estimator() -> FlowEstimator:
    def farneback_flow(previous_grey: np.ndarray, next_grey: np.ndarray) -> np.ndarray:
        _checked_pair(previous_grey, next_grey)
        flow = cv2.calcOpticalFlowFarneback(previous_grey, next_grey, None, **FARNEBACK_PARAMETERS)
        return flow.astype(np.float32, copy=False)

    return farneback_flow


def _tvl1_estimator() -> FlowEstimator:
    if not _has_optflow():
        raise ConfigError(
            'flow method "tvl1" needs OpenCV\'s contrib module cv2.optflow, which this '
            "OpenCV build lacks. Install opencv-contrib-python-headless in place of "
            "opencv-python-headless (pip uninstall opencv-python-headless && pip install "
            'opencv-contrib-python-headless), or choose flow method "dis".'
        )
    tvl1 = cv2.optflow.DualTVL1OpticalFlow_create()

    def tvl1_flow(previous_grey: np.ndarray, next_grey: np.ndarray) -> np.ndarray:
        _checked_pair(previous_grey, next_grey)
        return tvl1.calc(previous_grey, next_grey, None).astype(np.float32, copy=False)

    return tvl1_flow


def create_flow_estimator(method: str = "dis") -> FlowEstimator:
    """A function (previous_grey [H, W] uint8, next_grey [H, W] uint8) -> flow [H, W, 2].

    The flow is float32 (dx, dy) in pixels: the motion that takes each pixel of the
    previous frame to the next. The estimator keeps OpenCV state: use one per thread.
    Thread settings (cv2.setNumThreads) are left to the caller.
    """
    name = str(method).strip().lower()
    if name in DIS_PRESETS:
        return _dis_estimator(DIS_PRESETS[name])
    if name == "farneback":
        return _farneback_estimator()
    if name == "tvl1":
        return _tvl1_estimator()
    raise ConfigError(
        f"unknown flow method {method!r}; choose one of {', '.join(FLOW_METHODS)} "
        f"(available here: {', '.join(available_flow_methods())})."
    )


def _checked_bound(bound: float) -> float:
    if not bound > 0:
        raise ConfigError(f"flow bound {bound!r} must be a positive number of pixels.")
    return float(bound)


def quantize_flow(flow: np.ndarray, bound: float = FLOW_BOUND) -> np.ndarray:
    """uint8 of flow (any shape, e.g. [H, W, 2]): round(255 * (clip(v, -B, B) + B) / (2B)).

    NaN counts as no motion (128); +-inf and values beyond +-B saturate (255 / 0).
    Computed with OpenCV's saturating arithmetic in three passes over the values when
    they are within +-B (numpy needed eight, with as many temporary arrays: a third of
    DIS's own time): clip, then 255 / (2B) * v + 127.5 evaluated in single precision and
    rounded to the nearest integer. That equals the formula in exact arithmetic except
    where the exact value lies within about 1e-5 of a half-way point k + 0.5, where either
    neighbour may come out, one step (0.157 px) apart: one value in ~10^5 of uniformly
    random ones, and motion within ~1e-6 px of zero (127.5: DIS leaves such noise on
    static background). The former numpy code had the same property, with other
    boundaries: the stored levels of the two differ on ~0.5 % of a static clip's values,
    by one step.
    """
    bound = _checked_bound(bound)
    values = np.array(flow, dtype=np.float32, order="C")  # a copy, quantised in place
    return _quantized_in_place(values, bound)


def quantize_flow_planes(
    flow: np.ndarray, bound: float = FLOW_BOUND, overwrite: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """(x, y): quantize_flow of flow [H, W, 2] as two contiguous uint8 planes [H, W], as
    the JPEG encoder takes them.

    overwrite: clip `flow` in place instead of a copy (saves a pass over the field; for a
    flow estimator's fresh output that nothing else reads).
    """
    bound = _checked_bound(bound)
    if flow.ndim != 3 or flow.shape[-1] != 2:
        raise ValueError(f"flow must be [H, W, 2]; got shape {flow.shape}")
    in_place = overwrite and flow.dtype == np.float32 and flow.flags.c_contiguous
    values = flow if in_place else np.array(flow, dtype=np.float32, order="C")
    x_plane, y_plane = cv2.split(_quantized_in_place(values, bound))  # [H, W] each
    return x_plane, y_plane


def _quantized_in_place(values: np.ndarray, bound: float) -> np.ndarray:
    """quantize_flow of C-contiguous float32 `values`, which it clips in place."""
    if values.size == 0:
        return np.zeros(values.shape, np.uint8)
    # One row [1, N] of one channel: OpenCV applies a scalar to channel 0 only of a
    # multi-channel array (a 2-D array is one channel), and cv2.minMaxLoc pays per row
    # (10x slower on [H * W, 2]).
    flat = values.reshape(1, -1)
    cv2.patchNaNs(flat, 0.0)  # first: cv2.min / cv2.max turn NaN into the bound
    lowest, highest, _, _ = cv2.minMaxLoc(flat)  # one read; clipping reads and writes twice
    if lowest < -bound or highest > bound:  # also +-inf, which the conversion cannot take
        cv2.min(flat, bound, dst=flat)
        cv2.max(flat, -bound, dst=flat)
    # |v * 255 / 2B + 127.5| is v's level: the value is in [0, 255], so abs changes nothing.
    scale = 255.0 / (2.0 * bound)
    return cv2.convertScaleAbs(flat, alpha=scale, beta=bound * scale).reshape(values.shape)


def dequantize_flow(quantized: np.ndarray, bound: float = FLOW_BOUND) -> np.ndarray:
    """float32 flow in pixels of quantised flow: q * 2B / 255 - B (128 -> +0.078 px)."""
    bound = _checked_bound(bound)
    values = np.asarray(quantized, dtype=np.float32)
    return (values * np.float32(2.0 * bound / 255.0) - np.float32(bound)).astype(np.float32)


def flow_to_color(flow: np.ndarray, max_magnitude: float | None = None) -> np.ndarray:
    """RGB uint8 [H, W, 3] picture of flow [H, W, 2] on an HSV colour wheel.

    Hue is the direction of motion, value (brightness) the magnitude relative to
    `max_magnitude` (None: the largest magnitude in this flow); black means no motion.
    """
    dx = np.nan_to_num(flow[..., 0].astype(np.float32))
    dy = np.nan_to_num(flow[..., 1].astype(np.float32))
    magnitude, angle_degrees = cv2.cartToPolar(dx, dy, angleInDegrees=True)
    if max_magnitude is None:
        max_magnitude = float(magnitude.max()) if magnitude.size else 0.0
    scale = 255.0 / max_magnitude if max_magnitude > 0 else 0.0
    hsv = np.empty((*dx.shape, 3), dtype=np.uint8)
    hsv[..., 0] = np.floor(angle_degrees / 2.0).astype(np.uint8) % 180  # OpenCV hue: 0..179
    hsv[..., 1] = 255
    hsv[..., 2] = np.clip(magnitude * scale, 0, 255).astype(np.uint8)
    return cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)


def grey(frame_rgb: np.ndarray) -> np.ndarray:
    """uint8 [H, W] luminance of an RGB uint8 frame [H, W, 3] (a [H, W] frame is returned)."""
    if frame_rgb.ndim == 2:
        return frame_rgb
    return cv2.cvtColor(frame_rgb, cv2.COLOR_RGB2GRAY)
