"""Rendering the synthetic motion clips: a textured object over a textured background,
moving by its class (see actrec.data.synthetic.dataset for why the classes are built this way);
and a translated texture with known flow (for the flow tests and benchmarks).

Every function returns uint8 RGB frames [T, H, W, 3]. This module must not import
TensorFlow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from actrec.data.synthetic.config import SYNTHETIC_CLASSES, SyntheticConfig
from actrec.errors import ConfigError

# Unit direction (x right, y down) of each translation class.
_TRANSLATION_DIRECTIONS = {
    "MoveLeft": (-1.0, 0.0),
    "MoveRight": (1.0, 0.0),
    "MoveUp": (0.0, -1.0),
    "MoveDown": (0.0, 1.0),
}
# Sign of the angle change per frame; with y down a growing angle turns clockwise on screen.
_ROTATION_SIGNS = {"RotateClockwise": 1.0, "RotateCounterclockwise": -1.0}
_ZOOM_SIGNS = {"ZoomIn": 1.0, "ZoomOut": -1.0}


def _random_texture(
    rng: np.random.Generator,
    height: int,
    width: int,
    contrast: tuple[float, float] = (30.0, 50.0),
) -> np.ndarray:
    """float32 [H, W, 3] colour noise with detail from 2 to 12 px, mean ~128.

    Mean brightness (95-160) and contrast (standard deviation, from `contrast`) are drawn
    per texture.
    """
    texture = np.zeros((height, width, 3), np.float32)
    for cell, weight in ((12, 1.0), (6, 0.8), (3, 0.6), (2, 0.3)):
        coarse_height = max(2, math.ceil(height / cell) + 1)
        coarse_width = max(2, math.ceil(width / cell) + 1)
        coarse = rng.random((coarse_height, coarse_width, 3), dtype=np.float32)
        upsampled = cv2.resize(
            coarse, (coarse_width * cell, coarse_height * cell), interpolation=cv2.INTER_CUBIC
        )
        texture += weight * upsampled[:height, :width]
    grey_part = texture.mean(axis=2, keepdims=True)
    texture = 0.6 * grey_part + 0.4 * texture  # keep some colour, mostly luminance detail
    texture = (texture - texture.mean()) / max(float(texture.std()), 1e-6)
    brightness = rng.uniform(95.0, 160.0)
    return texture * rng.uniform(*contrast) + brightness


def _rotation_scale(angle_radians: float, scale: float) -> np.ndarray:
    """[2, 2] rotation by `angle_radians` (x right, y down) times `scale`."""
    cosine, sine = math.cos(angle_radians), math.sin(angle_radians)
    return scale * np.array([[cosine, -sine], [sine, cosine]], np.float64)


def _object_to_frame(
    linear: np.ndarray, centre: tuple[float, float], object_centre: tuple[float, float]
) -> np.ndarray:
    """[2, 3] affine map of object-patch pixels to frame pixels (patch centre -> centre)."""
    offset = np.asarray(centre, np.float64) - linear @ np.asarray(object_centre, np.float64)
    return np.hstack([linear, offset[:, None]])


@dataclass(frozen=True)
class ObjectMotion:
    """The object's pose at the middle frame and its change per frame."""

    centre: tuple[float, float]
    angle: float
    scale: float
    velocity: tuple[float, float]  # px / frame
    angular_speed: float  # radians / frame, positive = clockwise on screen
    log_zoom_rate: float  # log scale change / frame

    def pose_at(self, offset: float) -> tuple[float, float, float, float]:
        """(centre x, centre y, angle, scale) `offset` frames after the middle frame."""
        return (
            self.centre[0] + self.velocity[0] * offset,
            self.centre[1] + self.velocity[1] * offset,
            self.angle + self.angular_speed * offset,
            self.scale * math.exp(self.log_zoom_rate * offset),
        )

    def affine_at(self, offset: float, object_centre: tuple[float, float]) -> np.ndarray:
        """[2, 3] object -> frame map `offset` frames after the middle frame."""
        centre_x, centre_y, angle, scale = self.pose_at(offset)
        return _object_to_frame(_rotation_scale(angle, scale), (centre_x, centre_y), object_centre)


def clip_motion(class_name: str, rng: np.random.Generator, config: SyntheticConfig) -> ObjectMotion:
    """The object's motion in one clip of `class_name`.

    Every clip draws a centre (within the middle 30 % of each side) and an angle for the
    middle frame, a translation speed, a rotation speed and a zoom rate, and three frame
    offsets. The class moves one quantity with time; each quantity it does not move (x, y,
    scale) is held where the moving one would be at the clip's drawn offset. So a single
    frame's pose (position, scale, angle) is distributed alike in every class: a Move clip's
    object sweeps across the frame and a Zoom clip's grows or shrinks, and the others' sit
    where such a sweep would have put them. Without the held offsets (synthetic format 1) a
    single frame told the class's kind of motion (a far-off-centre object moved sideways, a
    large or small one zoomed) and a TSN on RGB frames reached 14-34 % (chance 12.5 %).
    """
    width, height = config.width, config.height
    centre = (rng.uniform(0.35, 0.65) * width, rng.uniform(0.35, 0.65) * height)
    angle = rng.uniform(0.0, 2.0 * math.pi)
    # Draw the same numbers for every class so appearance draws stay aligned across classes.
    speed = rng.uniform(*config.translation_speed)
    angular = math.radians(rng.uniform(*config.rotation_speed))
    zoom = math.log1p(rng.uniform(*config.zoom_rate))
    held_x, held_y, held_scale = rng.integers(0, config.num_frames, size=3) - (
        (config.num_frames - 1) / 2.0
    )
    direction = _TRANSLATION_DIRECTIONS.get(class_name, (0.0, 0.0))
    zoom_sign = _ZOOM_SIGNS.get(class_name, 0.0)
    held_centre = (
        centre[0] + (0.0 if direction[0] else speed * held_x),
        centre[1] + (0.0 if direction[1] else speed * held_y),
    )
    return ObjectMotion(
        centre=held_centre,
        angle=angle,
        scale=1.0 if zoom_sign else math.exp(zoom * held_scale),
        velocity=(direction[0] * speed, direction[1] * speed),
        angular_speed=_ROTATION_SIGNS.get(class_name, 0.0) * angular,
        log_zoom_rate=zoom_sign * zoom,
    )


def _checked_class(class_name: str) -> str:
    if class_name not in SYNTHETIC_CLASSES:
        raise ConfigError(
            f"unknown synthetic class {class_name!r}; choose one of {', '.join(SYNTHETIC_CLASSES)}."
        )
    return class_name


def render_clip(class_name: str, rng: np.random.Generator, config: SyntheticConfig) -> np.ndarray:
    """uint8 RGB [T, H, W, 3] clip of `class_name` (T = config.num_frames)."""
    _checked_class(class_name)
    width, height = config.width, config.height
    short_side = min(width, height)
    # Appearance: drawn identically for every class.
    background = _random_texture(rng, height, width, config.background_contrast)
    object_long_side = rng.uniform(*config.object_size) * short_side
    aspect = rng.uniform(*config.object_aspect)
    object_width = max(4, round(object_long_side))
    object_height = max(4, round(object_long_side * aspect))
    object_texture = _random_texture(rng, object_height, object_width, config.object_contrast)
    object_centre = ((object_width - 1) / 2.0, (object_height - 1) / 2.0)
    motion = clip_motion(class_name, rng, config)

    object_mask = np.ones((object_height, object_width), np.float32)
    middle = (config.num_frames - 1) / 2.0
    frames = np.empty((config.num_frames, height, width, 3), np.uint8)
    for index in range(config.num_frames):
        affine = motion.affine_at(index - middle, object_centre)
        frames[index] = _composited_frame(
            background, object_texture, object_mask, affine, rng, config.noise_std
        )
    return frames


def _composited_frame(
    background: np.ndarray,
    object_texture: np.ndarray,
    object_mask: np.ndarray,
    affine: np.ndarray,
    rng: np.random.Generator,
    noise_std: float,
) -> np.ndarray:
    """uint8 [H, W, 3]: the object warped by `affine` over the background, plus noise."""
    height, width = background.shape[:2]
    warped = cv2.warpAffine(
        object_texture,
        affine,
        (width, height),
        flags=cv2.INTER_LINEAR,
        borderMode=cv2.BORDER_REFLECT,
    )
    mask = cv2.warpAffine(
        object_mask, affine, (width, height), flags=cv2.INTER_LINEAR, borderValue=0.0
    )[..., None]
    frame = background * (1.0 - mask) + warped * mask
    if noise_std > 0:
        frame = frame + rng.normal(0.0, noise_std, frame.shape).astype(np.float32)
    return np.clip(np.floor(frame + 0.5), 0, 255).astype(np.uint8)


def render_translation_clip(
    dx: float, dy: float, num_frames: int, width: int, height: int, seed: int = 0
) -> np.ndarray:
    """uint8 RGB [T, H, W, 3]: one texture translated by (dx, dy) px per frame.

    Frame t shows the texture shifted by (t * dx, t * dy) (sub-pixel shifts by bilinear
    interpolation), so the true flow between consecutive frames is (dx, dy) everywhere.
    """
    rng = np.random.default_rng(seed)
    margin = math.ceil(max(abs(dx), abs(dy)) * max(num_frames - 1, 0)) + 8
    texture = _random_texture(rng, height + 2 * margin, width + 2 * margin)
    frames = np.empty((num_frames, height, width, 3), np.uint8)
    for index in range(num_frames):
        # frame(x) = texture(x - t * d + margin): content moves by +d per frame.
        shift = np.array(
            [[1.0, 0.0, margin - index * dx], [0.0, 1.0, margin - index * dy]], np.float64
        )
        warped = cv2.warpAffine(
            texture,
            shift,
            (width, height),
            flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
            borderMode=cv2.BORDER_REFLECT,
        )
        frames[index] = np.clip(np.floor(warped + 0.5), 0, 255).astype(np.uint8)
    return frames
