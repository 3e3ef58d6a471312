"""A dataset without official splits: one folder per class, split by a seeded draw.

Layout: ``root/<class>/<video files>``. Classes are the sorted names of the class folders
that hold at least one video file, exactly as the folders are named; videos in sub-folders
of a class folder belong to that class. video_id is the path relative to root without
extension. What counts as a video, how links are followed, and every file or folder that
is reported instead of listed (hidden, not a video, not in a class folder, a broken link,
...) is in actrec.data.sources.folder_tree; the listing carries those reports
(`ignored`, written to report.json) and a warning for each class too small to be tested
and each class folder without videos (`warnings`).

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

from actrec.data.format.frame_folder import DEFAULT_FOLDER_FPS
from actrec.data.sources.base import VIDEO_EXTENSIONS, DatasetListing, SourceOptions, VideoEntry
from actrec.data.sources.folder_tree import FolderTree, scan_folder_tree
from actrec.errors import ConfigError, DatasetError

DATASET = "folder"
IMBALANCE_RATIO = 10
"""A warning when the largest class has more than this many times the smallest's videos."""


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
    tree = scan_folder_tree(root)
    check_has_videos(root, tree)
    videos_by_class = tree.videos_by_class
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
    sizes = {class_name: len(videos_by_class[class_name]) for class_name in classes}
    warnings = small_class_warnings(sizes, options.val_fraction, options.test_fraction)
    warnings += [
        f"class folder {name!r} holds no video files, so it is not a class: add videos to "
        "it or remove it"
        for name in tree.empty_classes
    ]
    warnings += imbalance_warnings(sizes)
    if tree.frame_folders:
        warnings.append(
            f"{len(tree.frame_folders)} video(s) are frame folders (folders of image files "
            f"only, e.g. {tree.frame_folders[0]}/): each is read as one video, its frames in "
            f"file-name order at {DEFAULT_FOLDER_FPS:g} frames/s"
        )
    return DatasetListing(
        dataset=DATASET,
        split_name=split_name,
        classes=classes,
        entries=tuple(entries),
        ignored=tuple(tree.ignored),
        warnings=tuple(warnings),
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


def check_has_videos(root: Path, tree: FolderTree) -> None:
    """DatasetError naming what `root` holds when no class folder holds a video."""
    if tree.videos_by_class:
        return
    found = "class folders without video files" if tree.empty_classes else "no class folders"
    in_root = sum(1 for item in tree.ignored if item.reason == "not-in-class-folder")
    if in_root:
        found += f"; {in_root} video(s) directly in the root, not in class folders"
    raise DatasetError(
        f"no videos found in {root} ({found}); a folder dataset is root/<class>/<video> "
        f"with one folder per class holding video files ({', '.join(VIDEO_EXTENSIONS)})"
    )


def videos_for_a_test_video(val_fraction: float, test_fraction: float) -> int | None:
    """The fewest videos a class needs to get a test video (None: it never gets one)."""
    if test_fraction <= 0:
        return None
    first = max(1, int(0.5 / test_fraction) - 2)  # round(n * test_fraction) >= 1 from ~0.5 / f
    for num_videos in range(first, first + 1000):
        if holdout_counts(num_videos, val_fraction, test_fraction)[1] >= 1:
            return num_videos
    return None


def small_class_warnings(
    sizes: dict[str, int], val_fraction: float, test_fraction: float
) -> list[str]:
    """A warning for every class too small for the split to give it a test video (each
    class keeps a train video; with --test-fraction 0 there is no test split to warn of)."""
    if test_fraction <= 0:
        return []
    needed = videos_for_a_test_video(val_fraction, test_fraction)
    return [
        f"class {name!r} has {size} video{'s' if size != 1 else ''}: too few for a test video "
        f"at --test-fraction {test_fraction} (it needs {needed}), so it is trained on but "
        "never tested; add videos to it, or merge it into another class or remove its folder"
        for name, size in sizes.items()
        if holdout_counts(size, val_fraction, test_fraction)[1] == 0
    ]


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


def imbalance_warnings(sizes: dict[str, int]) -> list[str]:
    """One warning naming the largest and smallest class when the largest has more than
    IMBALANCE_RATIO times the smallest's videos (none otherwise)."""
    if len(sizes) < 2:
        return []
    largest = max(sizes, key=lambda name: (sizes[name], name))
    smallest = min(sizes, key=lambda name: (sizes[name], name))
    if sizes[largest] <= IMBALANCE_RATIO * sizes[smallest]:
        return []
    return [
        f"classes are imbalanced: the largest, {largest!r}, has {sizes[largest]} videos, more "
        f"than {IMBALANCE_RATIO}x the smallest, {smallest!r}, with {sizes[smallest]}; "
        "compare mean class accuracy with top-1, or add videos to the small classes"
    ]
