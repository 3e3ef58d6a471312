"""The built-in synthetic motion dataset: classes that only motion can tell apart.

Every clip shows a static low-contrast random-texture background and a high-contrast
textured rectangle drawn from the same appearance distributions for every class (texture,
size, aspect, position, orientation), which then moves by its class: translates left /
right / up / down, rotates clockwise / counterclockwise (on screen, y pointing down) or
zooms in / out about its centre, a few pixels per frame. Motion is parametrised about the
middle frame, so the middle frame of every class is drawn from one distribution, and a
clip's frames taken as an unordered set are distributed as those of the opposite class
(its time reversal: left / right, clockwise / counterclockwise, in / out): a single frame,
or an average of per-frame scores (TSN), cannot tell a class from its opposite; the flow
of two frames can, and so can a model that compares frames in order (TSM).

The contrasts matter (`background_contrast`, `object_contrast`): with equal contrasts the
object is camouflaged, visible only to pixel-accurate motion, and an RGB TSM on 32-pixel
crops, whose first temporal shift sees 8x8 feature maps, learns nothing.

The videos are real files (MJPG in .avi, intra-frame only, so the decoded motion is
what was rendered) in the UCF101 layout, so the ordinary UCF101-style preparation
reads them:

    ROOT/<Class>/v_<Class>_gGG_c01.avi
    ROOT/splits/classInd.txt, trainlist01.txt, testlist01.txt   (CRLF, like UCF101)
    ROOT/synthetic.json     the configuration; written last: its presence means complete

Generation is deterministic: the same configuration gives byte-identical files.

This module must not import TensorFlow.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import cv2
import numpy as np

from actrec.errors import ActrecError, ConfigError, DatasetError, OutputError
from actrec.progress import NullProgress, Progress

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
SYNTHETIC_FORMAT_VERSION = 1
CONFIG_FILE_NAME = "synthetic.json"
INCOMPLETE_FILE_NAME = ".synthetic-incomplete.json"
SPLITS_FOLDER_NAME = "splits"
VIDEO_EXTENSION = ".avi"
FOURCC_BY_EXTENSION = {".avi": "MJPG", ".mp4": "mp4v"}

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


# ----------------------------------------------------------------------------- rendering


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
class _ObjectMotion:
    """The object's pose at the middle frame and its change per frame."""

    centre: tuple[float, float]
    angle: float
    scale: float
    velocity: tuple[float, float]  # px / frame
    angular_speed: float  # radians / frame, positive = clockwise on screen
    log_zoom_rate: float  # log scale change / frame

    def affine_at(self, offset: float, object_centre: tuple[float, float]) -> np.ndarray:
        """[2, 3] object -> frame map `offset` frames after the middle frame."""
        centre = (
            self.centre[0] + self.velocity[0] * offset,
            self.centre[1] + self.velocity[1] * offset,
        )
        angle = self.angle + self.angular_speed * offset
        scale = self.scale * math.exp(self.log_zoom_rate * offset)
        return _object_to_frame(_rotation_scale(angle, scale), centre, object_centre)


def _class_motion(
    class_name: str, rng: np.random.Generator, config: SyntheticConfig
) -> tuple[tuple[float, float], float, float]:
    """(velocity px/frame, angular speed rad/frame, log zoom rate /frame) of one clip."""
    # Draw the same numbers for every class so appearance draws stay aligned across classes.
    speed = rng.uniform(*config.translation_speed)
    angular = math.radians(rng.uniform(*config.rotation_speed))
    zoom = math.log1p(rng.uniform(*config.zoom_rate))
    direction = _TRANSLATION_DIRECTIONS.get(class_name, (0.0, 0.0))
    velocity = (direction[0] * speed, direction[1] * speed)
    return (
        velocity,
        _ROTATION_SIGNS.get(class_name, 0.0) * angular,
        _ZOOM_SIGNS.get(class_name, 0.0) * zoom,
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
    centre = (rng.uniform(0.35, 0.65) * width, rng.uniform(0.35, 0.65) * height)
    angle = rng.uniform(0.0, 2.0 * math.pi)
    velocity, angular_speed, log_zoom_rate = _class_motion(class_name, rng, config)
    motion = _ObjectMotion(centre, angle, 1.0, velocity, angular_speed, log_zoom_rate)

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


# ----------------------------------------------------------------------------- writing


def _temporary_path(path: Path) -> Path:
    """A hidden name beside `path`, with the same extension (it picks the container)."""
    return path.with_name(f".{path.stem}.partial-{os.getpid()}{path.suffix}")


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _fsync_folder(folder: Path) -> None:
    if os.name != "posix":
        return
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def write_video(path: os.PathLike | str, frames_rgb: np.ndarray, fps: float) -> None:
    """Write RGB uint8 frames [T, H, W, 3] as a video file, atomically.

    The container follows the extension: .avi -> MJPG, .mp4 -> mp4v. The file is
    written under a temporary name in the same folder, synced, then renamed.
    Raises ActrecError when the extension is not supported or OpenCV cannot write.
    """
    video_path = Path(path)
    suffix = video_path.suffix.lower()
    if suffix not in FOURCC_BY_EXTENSION:
        raise ActrecError(
            f"{video_path}: cannot write videos with extension {video_path.suffix!r}; "
            f"use one of {', '.join(FOURCC_BY_EXTENSION)}."
        )
    frames = np.asarray(frames_rgb)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8 or not len(frames):
        raise ValueError(
            f"frames must be uint8 [T, H, W, 3] with T >= 1; got {frames.dtype} {frames.shape}"
        )
    height, width = frames.shape[1:3]
    temporary = _temporary_path(video_path)
    fourcc = cv2.VideoWriter_fourcc(*FOURCC_BY_EXTENSION[suffix])
    writer = cv2.VideoWriter(str(temporary), cv2.CAP_FFMPEG, fourcc, float(fps), (width, height))
    try:
        if not writer.isOpened():
            raise ActrecError(
                f"{video_path}: OpenCV could not open a {FOURCC_BY_EXTENSION[suffix]} video "
                f"writer ({width}x{height} at {fps} frames/s); check that the folder is "
                "writable and that OpenCV was built with FFmpeg."
            )
        for frame in frames:
            writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
        writer.release()
        _fsync_file(temporary)
        os.replace(temporary, video_path)
        _fsync_folder(video_path.parent)
    finally:
        writer.release()
        temporary.unlink(missing_ok=True)


def _write_text_atomically(path: Path, text: str) -> None:
    """Write `text` (UTF-8, line ends as given) under a temporary name, sync, rename."""
    temporary = _temporary_path(path)
    try:
        with open(temporary, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


# ----------------------------------------------------------------------------- dataset


def video_relative_path(class_name: str, group: int) -> str:
    """ "Class/v_Class_gGG_c01.avi", as UCF101 lists it (group is 1-based)."""
    return f"{class_name}/v_{class_name}_g{group:02d}_c01{VIDEO_EXTENSION}"


def _clip_rng(config: SyntheticConfig, class_index: int, group: int) -> np.random.Generator:
    """The generator of one clip: independent of the others and of generation order."""
    return np.random.default_rng([config.seed, class_index, group])


def _split_texts(config: SyntheticConfig) -> dict[str, str]:
    """{file name: CRLF text} of classInd.txt, trainlist01.txt and testlist01.txt."""
    num_test = config.num_test_videos_per_class
    class_lines, train_lines, test_lines = [], [], []
    for class_index, class_name in enumerate(SYNTHETIC_CLASSES):
        label = class_index + 1
        class_lines.append(f"{label} {class_name}")
        for group in range(1, config.videos_per_class + 1):
            relative = video_relative_path(class_name, group)
            if group <= num_test:
                test_lines.append(relative)
            else:
                train_lines.append(f"{relative} {label}")
    return {
        "classInd.txt": "".join(line + "\r\n" for line in class_lines),
        "trainlist01.txt": "".join(line + "\r\n" for line in train_lines),
        "testlist01.txt": "".join(line + "\r\n" for line in test_lines),
    }


def _description(config: SyntheticConfig) -> dict:
    return {
        "format": SYNTHETIC_FORMAT,
        "version": SYNTHETIC_FORMAT_VERSION,
        "classes": list(SYNTHETIC_CLASSES),
        "config": config.to_json_dict(),
    }


def _description_text(config: SyntheticConfig) -> str:
    return json.dumps(_description(config), indent=2, sort_keys=True) + "\n"


def _recorded_config(path: Path) -> dict | None:
    """The "config" recorded in a synthetic.json-like file (None: not ours / unreadable)."""
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(recorded, dict) or recorded.get("format") != SYNTHETIC_FORMAT:
        return None
    config = recorded.get("config")
    return config if isinstance(config, dict) else None


def is_synthetic_dataset(root: os.PathLike | str) -> bool:
    """Whether `root` holds a complete synthetic dataset (its synthetic.json is valid)."""
    return _recorded_config(Path(root) / CONFIG_FILE_NAME) is not None


def _config_mismatch_error(root: Path, recorded: dict | None, config: SyntheticConfig, what: str):
    wanted = config.to_json_dict()
    if recorded is None:
        differences = "its synthetic.json cannot be read"
    else:
        names = [field.name for field in fields(SyntheticConfig)]
        changed = [
            f"{name}={recorded.get(name)!r} (wanted {wanted[name]!r})"
            for name in names
            if recorded.get(name) != wanted[name]
        ]
        differences = "it was generated with " + (", ".join(changed) or "another format")
    return DatasetError(
        f"{root} already holds {what} synthetic dataset that differs from the one requested: "
        f"{differences}. Choose another folder, or delete {root} to regenerate it."
    )


def _resumable(root: Path, config: SyntheticConfig) -> bool:
    """Whether generation may write into `root`: new, empty, or our interrupted run.

    Returns True when an interrupted run of this configuration left files to reuse.
    """
    if root.exists() and not root.is_dir():
        raise OutputError(f"{root} is a file; give a folder for the synthetic dataset.")
    if not root.exists() or not any(root.iterdir()):
        return False
    marker = root / INCOMPLETE_FILE_NAME
    if not marker.exists():
        raise OutputError(
            f"{root} already holds other files; the synthetic dataset needs an empty or new "
            "folder. Choose another folder."
        )
    recorded = _recorded_config(marker)
    if recorded != config.to_json_dict():
        raise _config_mismatch_error(root, recorded, config, "an incomplete")
    return True


def generate_synthetic_dataset(
    root: os.PathLike | str,
    config: SyntheticConfig = SyntheticConfig(),
    progress: Progress = NullProgress(),  # noqa: B008 (stateless)
) -> Path:
    """Write the synthetic motion dataset into `root` (UCF101 layout) and return `root`.

    Does nothing when `root` already holds a complete set with the same configuration;
    raises DatasetError when it holds one with another configuration. An interrupted
    run of the same configuration is resumed (finished videos are kept).
    """
    root_path = Path(root)
    description_path = root_path / CONFIG_FILE_NAME
    marker = root_path / INCOMPLETE_FILE_NAME
    if description_path.exists():
        recorded = _recorded_config(description_path)
        if recorded != config.to_json_dict():
            raise _config_mismatch_error(root_path, recorded, config, "a")
        marker.unlink(missing_ok=True)
        return root_path

    resuming = _resumable(root_path, config)
    root_path.mkdir(parents=True, exist_ok=True)
    if not resuming:
        _write_text_atomically(marker, _description_text(config))
    _write_videos(root_path, config, progress, skip_existing=resuming)
    splits_folder = root_path / SPLITS_FOLDER_NAME
    splits_folder.mkdir(exist_ok=True)
    for name, text in _split_texts(config).items():
        _write_text_atomically(splits_folder / name, text)
    _write_text_atomically(description_path, _description_text(config))
    marker.unlink(missing_ok=True)
    return root_path


def _write_videos(
    root: Path, config: SyntheticConfig, progress: Progress, skip_existing: bool
) -> None:
    progress.start("generating synthetic videos", len(SYNTHETIC_CLASSES) * config.videos_per_class)
    try:
        for class_index, class_name in enumerate(SYNTHETIC_CLASSES):
            (root / class_name).mkdir(exist_ok=True)
            for group in range(1, config.videos_per_class + 1):
                path = root / video_relative_path(class_name, group)
                if not (skip_existing and path.is_file()):
                    clip = render_clip(class_name, _clip_rng(config, class_index, group), config)
                    write_video(path, clip, config.fps)
                progress.advance(1, frames=config.num_frames)
    finally:
        progress.finish()
