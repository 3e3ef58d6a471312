"""The synthetic motion dataset's configuration: its classes, its file names, and
`SyntheticConfig` (what to generate; recorded in ROOT/synthetic.json).

The dataset itself is described in actrec.data.synthetic.dataset. This module must not import
TensorFlow.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from actrec.errors import ConfigError

SYNTHETIC_CLASSES = (
    "MoveLeft",
    "MoveRight",
    "MoveUp",
    "MoveDown",
    "RotateClockwise",
    "RotateCounterclockwise",
    "ZoomIn",
    "ZoomOut",
)
SYNTHETIC_FORMAT = "actrec-synthetic"
# 2: what a class does not move is held at a drawn offset (render.clip_motion).
SYNTHETIC_FORMAT_VERSION = 2
CONFIG_FILE_NAME = "synthetic.json"
INCOMPLETE_FILE_NAME = ".synthetic-incomplete.json"
SPLITS_FOLDER_NAME = "splits"
VIDEO_EXTENSION = ".avi"


@dataclass(frozen=True)
class SyntheticConfig:
    """What to generate; every field is recorded in ROOT/synthetic.json.

    videos_per_class: clips per class (each its own group gGG, c01).
    num_frames, width, height, fps: the clips.
    seed: everything random derives from it (and the class and group).
    translation_speed: range of px / frame of the Move* classes.
    rotation_speed: range of degrees / frame of the Rotate* classes.
    zoom_rate: range of the relative scale change / frame of the Zoom* classes.
    object_size: range of the object's longer side, as a fraction of the frame's short side.
    object_aspect: range of the object's shorter side over its longer side.
    background_contrast / object_contrast: ranges of the textures' standard deviation (grey
        levels). A low-contrast background under a high-contrast object keeps the object
        visible at the small sizes models see (a 32-pixel crop): with equal contrasts it is
        camouflaged, and only pixel-accurate motion (optical flow) finds it.
    noise_std: standard deviation (grey levels) of per-frame pixel noise.
    test_fraction: share of each class's groups in testlist01 (the lowest groups).
    """

    videos_per_class: int = 24
    num_frames: int = 24
    width: int = 128
    height: int = 96
    fps: float = 25.0
    seed: int = 0
    translation_speed: tuple[float, float] = (1.5, 2.5)
    rotation_speed: tuple[float, float] = (6.0, 9.0)
    zoom_rate: tuple[float, float] = (0.04, 0.06)
    object_size: tuple[float, float] = (0.4, 0.6)
    object_aspect: tuple[float, float] = (0.6, 1.0)
    background_contrast: tuple[float, float] = (8.0, 15.0)
    object_contrast: tuple[float, float] = (40.0, 60.0)
    noise_std: float = 2.0
    test_fraction: float = 0.3

    def __post_init__(self) -> None:
        _require(self.videos_per_class >= 2, "videos_per_class", self.videos_per_class, ">= 2")
        _require(self.num_frames >= 2, "num_frames", self.num_frames, ">= 2")
        _require(self.width >= 32, "width", self.width, ">= 32")
        _require(self.height >= 32, "height", self.height, ">= 32")
        _require(self.fps > 0, "fps", self.fps, "> 0")
        _require(self.noise_std >= 0, "noise_std", self.noise_std, ">= 0")
        _require(0 < self.test_fraction < 1, "test_fraction", self.test_fraction, "in (0, 1)")
        for name, limit in (
            ("translation_speed", 20.0),
            ("rotation_speed", 20.0),
            ("zoom_rate", 0.2),
            ("object_size", 1.0),
            ("object_aspect", 1.0),
            ("background_contrast", 128.0),
            ("object_contrast", 128.0),
        ):
            low, high = getattr(self, name)
            _require(0 < low <= high <= limit, name, (low, high), f"0 < low <= high <= {limit}")

    def to_json_dict(self) -> dict:
        """The configuration as plain JSON values (tuples become lists)."""
        return json.loads(json.dumps(asdict(self)))

    @property
    def num_test_videos_per_class(self) -> int:
        count = round(self.videos_per_class * self.test_fraction)
        return min(max(count, 1), self.videos_per_class - 1)


def _require(condition: bool, name: str, value: object, expected: str) -> None:
    if not condition:
        raise ConfigError(f"synthetic dataset: {name}={value!r} is not valid; expected {expected}.")
