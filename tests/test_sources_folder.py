"""Folder source: class-per-folder tree with a seeded stratified train / val / test split."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from actrec.data.sources import folder, list_videos
from actrec.data.sources.base import SourceOptions
from actrec.errors import ConfigError, DatasetError

CLASS_SIZES = {"clap": 10, "jump": 20, "run": 5, "sit": 2, "wave": 1}


def touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"tiny")
    return path


def make_folder_tree(root: Path, class_sizes: dict[str, int] = CLASS_SIZES) -> Path:
    """root/<class>/clip_NNN.mp4 (tiny files), plus files the source must ignore."""
    for class_name, num_videos in class_sizes.items():
        for index in range(num_videos):
            touch(root / class_name / f"clip_{index:03d}.mp4")
    touch(root / "README.txt")
    touch(root / "clap" / "notes.txt")
    touch(root / "clap" / ".hidden.mp4")
    touch(root / ".cache" / "x.mp4")
    return root


def splits_by_id(listing) -> dict[str, str]:
    return {entry.video_id: entry.split for entry in listing.entries}


def test_classes_ids_and_labels(tmp_path):
    root = make_folder_tree(tmp_path)

    listing = list_videos("folder", root)

    assert listing.dataset == "folder"
    assert listing.split_name == "seed-0"
    assert listing.classes == ("clap", "jump", "run", "sit", "wave")
    assert len(listing.entries) == sum(CLASS_SIZES.values())
    for entry in listing.entries:
        class_name = entry.video_id.split("/")[0]
        assert entry.label == listing.classes.index(class_name)
        assert entry.path == root / f"{entry.video_id}.mp4"
    keys = [(entry.split, entry.video_id) for entry in listing.entries]
    assert keys == sorted(keys)


def test_split_is_stratified_by_class(tmp_path):
    listing = list_videos("folder", make_folder_tree(tmp_path))

    counts = Counter((entry.video_id.split("/")[0], entry.split) for entry in listing.entries)
    # val 0.1, test 0.2 of each class, halves rounded up, at least one train video
    assert (counts["clap", "train"], counts["clap", "val"], counts["clap", "test"]) == (7, 1, 2)
    assert (counts["jump", "train"], counts["jump", "val"], counts["jump", "test"]) == (14, 2, 4)
    assert (counts["run", "train"], counts["run", "val"], counts["run", "test"]) == (3, 1, 1)
    assert (counts["sit", "train"], counts["sit", "val"], counts["sit", "test"]) == (2, 0, 0)
    assert (counts["wave", "train"], counts["wave", "val"], counts["wave", "test"]) == (1, 0, 0)


def test_fractions_are_honoured(tmp_path):
    options = SourceOptions(val_fraction=0.25, test_fraction=0.5)
    listing = list_videos("folder", make_folder_tree(tmp_path, {"a": 8, "b": 4}), options)
    assert listing.counts_by_split() == {"train": 3, "val": 3, "test": 6}


def test_same_seed_gives_the_same_split(tmp_path):
    root = make_folder_tree(tmp_path)
    first = list_videos("folder", root, SourceOptions(seed=7))
    second = list_videos("folder", root, SourceOptions(seed=7))
    assert first == second
    assert first.split_name == "seed-7"


def test_another_seed_gives_another_split(tmp_path):
    root = make_folder_tree(tmp_path)
    seed_0 = splits_by_id(list_videos("folder", root, SourceOptions(seed=0)))
    seed_1 = splits_by_id(list_videos("folder", root, SourceOptions(seed=1)))
    assert seed_0.keys() == seed_1.keys()
    assert seed_0 != seed_1
    assert Counter(seed_0.values()) == Counter(seed_1.values())


def test_small_and_uneven_classes_never_fail_and_keep_a_train_video(tmp_path):
    sizes = {f"class_{index:02d}": random.Random(index).randint(1, 6) for index in range(30)}
    root = make_folder_tree(tmp_path, sizes)
    for val_fraction, test_fraction in [(0.1, 0.2), (0.45, 0.45), (0.0, 0.5), (0.5, 0.0)]:
        options = SourceOptions(val_fraction=val_fraction, test_fraction=test_fraction)
        listing = list_videos("folder", root, options)
        train_labels = {entry.label for entry in listing.entries_in("train")}
        assert train_labels == set(range(len(sizes)))
        assert len(listing.entries) == sum(sizes.values())


@pytest.mark.parametrize(
    ("num_videos", "expected"),
    [(1, (0, 0)), (2, (0, 0)), (3, (0, 1)), (5, (1, 1)), (10, (1, 2)), (15, (2, 3))],
)
def test_holdout_counts(num_videos, expected):
    assert folder.holdout_counts(num_videos, 0.1, 0.2) == expected


def test_videos_in_sub_folders_of_a_class_count_for_it(tmp_path):
    root = make_folder_tree(tmp_path, {"a": 2})
    touch(root / "a" / "session_1" / "take.AVI")

    listing = list_videos("folder", root)

    entry = next(e for e in listing.entries if e.video_id == "a/session_1/take")
    assert entry.label == 0
    assert entry.path == root / "a" / "session_1" / "take.AVI"


def test_folders_without_videos_are_not_classes(tmp_path):
    root = make_folder_tree(tmp_path, {"a": 2, "b": 2})
    touch(root / "annotations" / "notes.txt")
    assert list_videos("folder", root).classes == ("a", "b")


def test_empty_root_is_an_error(tmp_path):
    with pytest.raises(DatasetError, match="no class folders"):
        list_videos("folder", tmp_path)


def test_root_without_videos_is_an_error(tmp_path):
    touch(tmp_path / "clip.mp4")
    touch(tmp_path / "a" / "notes.txt")
    with pytest.raises(DatasetError, match=r"class folders without video files.*root/<class>"):
        list_videos("folder", tmp_path)


@pytest.mark.parametrize(
    ("val_fraction", "test_fraction", "message"),
    [
        (-0.1, 0.2, "val_fraction must be"),
        (0.1, 1.0, "test_fraction must be"),
        (0.5, 0.5, "below 1"),
    ],
)
def test_bad_fractions_are_config_errors(tmp_path, val_fraction, test_fraction, message):
    options = SourceOptions(val_fraction=val_fraction, test_fraction=test_fraction)
    with pytest.raises(ConfigError, match=message):
        list_videos("folder", make_folder_tree(tmp_path), options)


def test_official_split_ids_do_not_exist(tmp_path):
    root = make_folder_tree(tmp_path)
    assert list_videos("folder", root, SourceOptions(split="seed-3", seed=3)).split_name == "seed-3"
    with pytest.raises(ConfigError, match=r"no official splits.*--seed"):
        list_videos("folder", root, SourceOptions(split="1"))
