"""What every dataset source returns: the videos of one official split, labelled.

A source reads a dataset's official annotation files and lists its videos; it does not
open the videos. Missing files are not an error here: `prepare` reports them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

SPLIT_NAMES = ("train", "val", "test")
VIDEO_EXTENSIONS = (".avi", ".mp4", ".mkv", ".webm", ".mov", ".m4v", ".mpg", ".mpeg", ".flv")
UNLABELLED = -1


@dataclass(frozen=True)
class VideoEntry:
    """One listed video.

    video_id: stable unique id, the path relative to the dataset root as the annotation
        names it, without extension (e.g. "ApplyEyeMakeup/v_ApplyEyeMakeup_g08_c01").
    path: where the file is (or, when it is missing, where it was expected).
    label: 0-based class index, or UNLABELLED (-1) for splits without labels.
    split: one of SPLIT_NAMES.
    """

    video_id: str
    path: Path
    label: int
    split: str


@dataclass(frozen=True)
class IgnoredPath:
    """A file or folder under a dataset root that is not listed as a video, and why.

    path: relative to the root, "/"-separated; a folder's ends with "/".
    reason: a short code for reports ("not-a-video", "hidden", "broken-symlink", ...).
    detail: what it is, for a person ("not a video file (.txt)", "broken symlink -> x.mp4").
    """

    path: str
    reason: str
    detail: str


@dataclass(frozen=True)
class SourceOptions:
    """Options shared by the sources; each source uses the ones that apply to it.

    split: official split id ("1", "2", "3" for UCF101 / HMDB51); None = the default.
    annotations: folder (or file) holding the annotation files; None = look in the root.
    seed, val_fraction, test_fraction: the seeded stratified split of `folder`.
    """

    split: str | None = None
    annotations: Path | None = None
    seed: int = 0
    val_fraction: float = 0.1
    test_fraction: float = 0.2


@dataclass(frozen=True)
class DatasetListing:
    """The videos of one split of one dataset.

    dataset: source name ("ucf101", ...); split_name: which official split ("1", ...).
    classes: class names, index = label. entries: sorted by (split, video_id).
    annotation_files: the files that were read, for the manifest.
    ignored: what the source found under the root and did not list (report.json "ignored").
    warnings: what a person should know before training on it (printed; in report.json).
    """

    dataset: str
    split_name: str
    classes: tuple[str, ...]
    entries: tuple[VideoEntry, ...]
    annotation_files: tuple[Path, ...] = field(default=())
    ignored: tuple[IgnoredPath, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())

    def entries_in(self, split: str) -> list[VideoEntry]:
        return [entry for entry in self.entries if entry.split == split]

    def counts_by_split(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for entry in self.entries:
            counts[entry.split] = counts.get(entry.split, 0) + 1
        return counts


def is_video_file(name: str) -> bool:
    """Whether a file name looks like a video (known extension, not hidden)."""
    return not name.startswith(".") and os.path.splitext(name)[1].lower() in VIDEO_EXTENSIONS


def video_files_under(root: Path) -> Iterator[Path]:
    """Every video file under `root`, walked once in sorted order (hidden folders skipped,
    linked folders followed once, so a link loop cannot recurse forever)."""
    visited: set[str] = set()
    for folder, folder_names, file_names in os.walk(root, followlinks=True):
        real_folder = os.path.realpath(folder)
        if real_folder in visited:
            folder_names[:] = []
            continue
        visited.add(real_folder)
        folder_names[:] = sorted(name for name in folder_names if not name.startswith("."))
        for file_name in sorted(file_names):
            if is_video_file(file_name):
                yield Path(folder) / file_name
