"""A dataset without official splits: one folder per class, split by a seeded draw.

Layout: ``root/<class>/<video files>`` (files in sub-folders of a class folder count for
that class). Classes are the sorted names of the class folders that hold at least one
video file (extensions in VIDEO_EXTENSIONS, any letter case); hidden files and folders
are ignored. video_id is the path relative to root without extension.

The split is stratified: every class is split on its own, so each split holds the same
share of every class. For a class of n videos, round(n * test_fraction) go to test and
round(n * val_fraction) to val (halves round up), drawn with scikit-learn's
`train_test_split` from one `numpy.random.RandomState(seed)` over the classes in sorted
order, so the same seed and files give the same split, and another seed another split.

Why per class rather than one `train_test_split(..., stratify=labels)` over everything:
scikit-learn's stratified split refuses classes with a single video and hold-outs
smaller than the number of classes, which small folders hit all the time. Per class it
never fails and small classes are handled predictably: a class always keeps at least one
train video (val, then test, give theirs back until it has one), so a class of one video
is train only, and a class of two keeps both in train at the default fractions.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from actrec.data.sources.base import (
    VIDEO_EXTENSIONS,
    DatasetListing,
    SourceOptions,
    VideoEntry,
    video_files_under,
)
from actrec.errors import ConfigError, DatasetError

DATASET = "folder"


def list_videos(root: Path, options: SourceOptions) -> DatasetListing:
    """List the videos of a class-per-folder tree, split into train / val / test."""
    check_fractions(options.val_fraction, options.test_fraction)
    split_name = f"seed-{options.seed}"
    if options.split is not None and str(options.split) != split_name:
        raise ConfigError(
            f"folder datasets have no official splits, so split {options.split!r} does not "
            f"exist; the only split is {split_name!r}, drawn with --seed (and "
            "--val-fraction / --test-fraction)"
        )
    videos_by_class = videos_by_class_in(root)
    classes = tuple(sorted(videos_by_class))
    random_state = np.random.RandomState(options.seed)
    entries: list[VideoEntry] = []
    for label, class_name in enumerate(classes):
        video_ids = sorted(videos_by_class[class_name])
        split_by_id = split_of_class(
            video_ids, options.val_fraction, options.test_fraction, random_state
        )
        entries.extend(
            VideoEntry(
                video_id=video_id,
                path=videos_by_class[class_name][video_id],
                label=label,
                split=split_by_id[video_id],
            )
            for video_id in video_ids
        )
    entries.sort(key=lambda entry: (entry.split, entry.video_id))
    return DatasetListing(
        dataset=DATASET, split_name=split_name, classes=classes, entries=tuple(entries)
    )


def check_fractions(val_fraction: float, test_fraction: float) -> None:
    """ConfigError unless both fractions are in [0, 1) and leave some videos for train."""
    for name, value in (("val_fraction", val_fraction), ("test_fraction", test_fraction)):
        if not 0 <= value < 1:
            raise ConfigError(f"{name} must be at least 0 and below 1, got {value}")
    if val_fraction + test_fraction >= 1:
        raise ConfigError(
            f"val_fraction + test_fraction must be below 1 so train keeps videos, got "
            f"{val_fraction} + {test_fraction}"
        )


def videos_in_class_folder(root: Path, class_folder: Path) -> dict[str, Path]:
    """{video_id: path} of the video files anywhere under one class folder (linked
    folders followed once, hidden ones skipped)."""
    videos: dict[str, Path] = {}
    for path in video_files_under(class_folder):
        videos.setdefault(path.relative_to(root).with_suffix("").as_posix(), path)
    return videos


def videos_by_class_in(root: Path) -> dict[str, dict[str, Path]]:
    """{class name: {video_id: path}} for the class folders with videos; DatasetError
    when there are none."""
    class_folders = sorted(
        path for path in root.iterdir() if path.is_dir() and not path.name.startswith(".")
    )
    videos_by_class = {
        folder.name: videos
        for folder in class_folders
        if (videos := videos_in_class_folder(root, folder))
    }
    if not videos_by_class:
        found = "no class folders" if not class_folders else "class folders without video files"
        raise DatasetError(
            f"no videos found in {root} ({found}); a folder dataset is root/<class>/<video> "
            f"with one folder per class holding video files ({', '.join(VIDEO_EXTENSIONS)})"
        )
    return videos_by_class


def rounded_count(num_videos: int, fraction: float) -> int:
    """round(num_videos * fraction) with halves rounded up (not to even)."""
    return int(num_videos * fraction + 0.5)


def holdout_counts(num_videos: int, val_fraction: float, test_fraction: float) -> tuple[int, int]:
    """(num_val, num_test) for a class of num_videos, leaving at least one for train."""
    num_val = rounded_count(num_videos, val_fraction)
    num_test = rounded_count(num_videos, test_fraction)
    while num_videos - num_val - num_test < 1 and num_val > 0:
        num_val -= 1
    while num_videos - num_val - num_test < 1 and num_test > 0:
        num_test -= 1
    return num_val, num_test


def split_of_class(
    video_ids: list[str],
    val_fraction: float,
    test_fraction: float,
    random_state: np.random.RandomState,
) -> dict[str, str]:
    """{video_id: "train" | "val" | "test"} for the sorted video ids of one class."""
    from sklearn.model_selection import train_test_split  # deferred: heavy import

    num_val, num_test = holdout_counts(len(video_ids), val_fraction, test_fraction)
    remaining = list(video_ids)
    split_by_id: dict[str, str] = {}
    for split, count in (("test", num_test), ("val", num_val)):
        if count == 0:
            continue
        remaining, held_out = train_test_split(
            remaining, test_size=count, random_state=random_state, shuffle=True
        )
        split_by_id.update(dict.fromkeys(held_out, split))
    split_by_id.update(dict.fromkeys(remaining, "train"))
    return split_by_id
