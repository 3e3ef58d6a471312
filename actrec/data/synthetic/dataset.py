"""The built-in synthetic motion dataset: classes that only motion can tell apart.

Every clip shows a static low-contrast random-texture background and a high-contrast
textured rectangle drawn from the same appearance distributions for every class (texture,
size, aspect, position, orientation), which then moves by its class: translates left /
right / up / down, rotates clockwise / counterclockwise (on screen, y pointing down) or
zooms in / out about its centre, a few pixels per frame. What a class does not move (the
object's x, its y, its size) is held where the moving quantity would be at a frame
drawn per clip, so one frame's pose is distributed alike in every class and a single frame
tells nothing of the class, not even its kind of motion (see
actrec.data.synthetic.render.clip_motion). Motion is parametrised about the middle frame,
so a clip's frames taken as an unordered set are distributed as those of the opposite class
(its time reversal: left / right, clockwise / counterclockwise, in / out). A TSN, which
averages per-frame scores, stays near chance (1/8); the flow of two frames tells the class,
and so does a model that compares frames in order (TSM).

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
import os
from dataclasses import fields
from pathlib import Path

import numpy as np

from actrec.data.synthetic.config import (
    CONFIG_FILE_NAME,
    INCOMPLETE_FILE_NAME,
    SPLITS_FOLDER_NAME,
    SYNTHETIC_CLASSES,
    SYNTHETIC_FORMAT,
    SYNTHETIC_FORMAT_VERSION,
    VIDEO_EXTENSION,
    SyntheticConfig,
)
from actrec.data.synthetic.render import render_clip
from actrec.data.synthetic.video_writer import write_video
from actrec.errors import DatasetError, OutputError
from actrec.files.atomic import write_text_atomic
from actrec.progress import NullProgress, Progress

__all__ = [
    "check_synthetic_version",
    "generate_synthetic_dataset",
    "is_synthetic_dataset",
    "video_relative_path",
]


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


def check_synthetic_version(root: os.PathLike | str) -> None:
    """Raise DatasetError when the synthetic dataset in `root` was drawn by another version
    of the generator (its videos are not what this version draws)."""
    _check_version(Path(root) / CONFIG_FILE_NAME, Path(root))


def _check_version(path: Path, root: Path) -> None:
    """check_synthetic_version of the description or marker file `path` in `root`."""
    try:
        version = json.loads(path.read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError, AttributeError):
        return  # unreadable: the configuration check names it
    if version != SYNTHETIC_FORMAT_VERSION:
        raise DatasetError(
            f"{root} holds a synthetic dataset drawn by another version of actrec (synthetic "
            f"format {version!r}; this version draws format {SYNTHETIC_FORMAT_VERSION}, whose "
            f"single frames do not tell the classes apart). Delete {root} (and its prepared "
            "copy) to regenerate it, or choose another folder."
        )


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
    _check_version(marker, root)
    recorded = _recorded_config(marker)
    if recorded != config.to_json_dict():
        raise _config_mismatch_error(root, recorded, config, "an incomplete")
    return True


def generate_synthetic_dataset(
    root: os.PathLike | str,
    config: SyntheticConfig = SyntheticConfig(),  # noqa: B008 (frozen)
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
        _check_version(description_path, root_path)
        recorded = _recorded_config(description_path)
        if recorded != config.to_json_dict():
            raise _config_mismatch_error(root_path, recorded, config, "a")
        marker.unlink(missing_ok=True)
        return root_path

    resuming = _resumable(root_path, config)
    root_path.mkdir(parents=True, exist_ok=True)
    if not resuming:
        write_text_atomic(marker, _description_text(config))
    _write_videos(root_path, config, progress, skip_existing=resuming)
    splits_folder = root_path / SPLITS_FOLDER_NAME
    splits_folder.mkdir(exist_ok=True)
    for name, text in _split_texts(config).items():
        write_text_atomic(splits_folder / name, text)
    write_text_atomic(description_path, _description_text(config))
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
