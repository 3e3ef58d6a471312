"""Folder source: class-per-folder tree with a seeded stratified train / val / test split."""

from __future__ import annotations

import json
import os
import random
import re
from collections import Counter
from pathlib import Path

import pytest
from tiny_videos import write_tiny_video

from actrec.data.sources import folder, folder_tree, list_videos
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


# --- a class-per-folder tree as users have them, through `actrec prepare folder` ---------

TINY = {"num_frames": 4, "width": 32, "height": 24}
SMALL_CLASS_WARNING = (
    "class 'Solo' has 1 video: too few for a test video at --test-fraction 0.2 (it needs 3), "
    "so it is trained on but never tested; add videos to it, or merge it into another class "
    "or remove its folder"
)
EMPTY_CLASS_WARNING = (
    "class folder 'Empty Class' holds no video files, so it is not a class: add videos to it "
    "or remove it"
)


def link(path: Path, target: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


def make_real_world_tree(tmp_path: Path) -> Path:
    """Tiny real videos in every container and letter case, and beside them every kind of
    path a real folder holds that is not a video of a class."""
    root, elsewhere = tmp_path / "my-videos", tmp_path / "elsewhere"
    for index, relative in enumerate(
        [
            "Tai Chi/clip1.MP4",
            "Tai Chi/clip2.mov",
            "Tai Chi/session1/clip3.mkv",  # a sub-folder: still class "Tai Chi"
            "Café-Tänze/tanz1.webm",
            "Café-Tänze/tanz2.Mp4",
            "Café-Tänze/tanz3.avi",
            "Solo/only.mp4",
        ]
    ):
        write_tiny_video(root / relative, seed=index, **TINY)
    for index in range(3):
        write_tiny_video(elsewhere / "yoga" / f"pose{index}.mp4", seed=10 + index, **TINY)
    write_tiny_video(elsewhere / "real.avi", seed=20, **TINY)
    link(root / "Tai Chi" / "linked.avi", "../../elsewhere/real.avi")  # a linked video
    link(root / "Yoga", "../elsewhere/yoga")  # a linked class folder
    link(root / "Yoga Again", "../elsewhere/yoga")  # the same folder linked again
    link(root / "Tai Chi" / "again", ".")  # a loop
    link(root / "Tai Chi" / "broken.mp4", "gone.mp4")
    (root / "Tai Chi" / "corrupt.mp4").write_bytes(b"\x00garbage" * 64)  # listed, skipped
    touch(root / "Café-Tänze" / "tanz3.mov")  # same id as tanz3.avi
    touch(root / "Café-Tänze" / "poster.jpg")
    for name in ("notes.txt", "Thumbs.db", "cover.JPG", ".DS_Store", "._clip1.MP4"):
        touch(root / "Tai Chi" / name)
    os.mkfifo(root / "Tai Chi" / "pipe.mp4")
    with open(os.fsencode(root / "Tai Chi") + b"/caf\xe9.mp4", "wb") as handle:
        handle.write(b"latin-1 name")
    (root / "Empty Class").mkdir()
    for name in ("README.txt", "stray.mp4", ".DS_Store", ".git/config", ".git/objects/ab"):
        touch(root / name)
    return root


EXPECTED_IGNORED = [
    ("bad-name", "the name is not valid UTF-8: rename it", ["Tai Chi/caf\\xe9.mp4"]),
    ("broken-symlink", "broken symlink -> gone.mp4", ["Tai Chi/broken.mp4"]),
    (
        "duplicate-folder",
        "linked folder -> ../elsewhere/yoga is Yoga/, searched already: its videos are listed once",
        ["Yoga Again/"],
    ),
    (
        "duplicate-name",
        "Café-Tänze/tanz3.avi has the same name without its extension, and only it is "
        "listed: rename one to keep both",
        ["Café-Tänze/tanz3.mov"],
    ),
    (
        "empty-class-folder",
        "a class folder without video files, so not a class: add videos or remove it",
        ["Empty Class/"],
    ),
    ("hidden", "hidden file", [".DS_Store", "Tai Chi/.DS_Store"]),
    ("hidden", "hidden file (._ macOS metadata, not a video)", ["Tai Chi/._clip1.MP4"]),
    ("hidden", "hidden folder, not searched", [".git/"]),
    ("not-a-file", "not a regular file (a pipe, socket or device)", ["Tai Chi/pipe.mp4"]),
    ("not-a-video", "not a video file (.db)", ["Tai Chi/Thumbs.db"]),
    ("not-a-video", "not a video file (.jpg)", ["Café-Tänze/poster.jpg", "Tai Chi/cover.JPG"]),
    ("not-a-video", "not a video file (.txt)", ["README.txt", "Tai Chi/notes.txt"]),
    (
        "not-in-class-folder",
        "a video directly in the root, not in a class folder: move it into the folder of its class",
        ["stray.mp4"],
    ),
    (
        "symlink-loop",
        "symlink loop -> .: it links to a folder that holds it, not followed",
        ["Tai Chi/again/"],
    ),
]


def test_real_world_tree_prepares_every_video_and_reports_everything_else(tmp_path, cli_runner):
    root, out = make_real_world_tree(tmp_path), tmp_path / "prepared"

    result = cli_runner(
        "prepare", "folder", "--root", root, "--out", out, "--flow", "none",
        "--size", "original", "--min-frames", "2", "--workers", "1",
    )  # fmt: skip

    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["classes"] == ["Café-Tänze", "Solo", "Tai Chi", "Yoga"]
    videos = {video["id"]: video for video in manifest["videos"]}
    assert {video_id: (v["label"], v["status"]) for video_id, v in videos.items()} == {
        "Café-Tänze/tanz1": (0, "ok"),  # .webm
        "Café-Tänze/tanz2": (0, "ok"),  # .Mp4
        "Café-Tänze/tanz3": (0, "ok"),  # .avi (its .mov twin is ignored)
        "Solo/only": (1, "ok"),
        "Tai Chi/clip1": (2, "ok"),  # .MP4
        "Tai Chi/clip2": (2, "ok"),  # .mov
        "Tai Chi/corrupt": (2, "skipped"),
        "Tai Chi/linked": (2, "ok"),  # a link to a video outside the tree
        "Tai Chi/session1/clip3": (2, "ok"),  # .mkv in a sub-folder
        "Yoga/pose0": (3, "ok"),  # in a linked class folder
        "Yoga/pose1": (3, "ok"),
        "Yoga/pose2": (3, "ok"),
    }
    assert videos["Tai Chi/linked"]["path"] == str(root / "Tai Chi" / "linked.avi")
    assert all(v["frames"] == 4 for v in videos.values() if v["status"] == "ok")
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert [(item["video_id"], item["reason"]) for item in report["skipped"]] == [
        ("Tai Chi/corrupt", "undecodable")
    ]
    assert report["skipped_by_reason"] == {"undecodable": 1}
    ignored = [(group["reason"], group["detail"], group["paths"]) for group in report["ignored"]]
    assert ignored == [(reason, detail, paths) for reason, detail, paths in EXPECTED_IGNORED]
    assert all(group["count"] == len(group["paths"]) for group in report["ignored"])
    assert report["num_ignored"] == 17
    assert report["ignored_by_reason"] == {
        "bad-name": 1, "broken-symlink": 1, "duplicate-folder": 1, "duplicate-name": 1,
        "empty-class-folder": 1, "hidden": 4, "not-a-file": 1, "not-a-video": 5,
        "not-in-class-folder": 1, "symlink-loop": 1,
    }  # fmt: skip
    assert report["warnings"] == [SMALL_CLASS_WARNING, EMPTY_CLASS_WARNING]
    # names are written as they are, not \u-escaped
    assert '"Café-Tänze/tanz1"' in (out / "manifest.json").read_text(encoding="utf-8")
    assert '"Café-Tänze/poster.jpg"' in (out / "report.json").read_text(encoding="utf-8")
    assert f"warning: {SMALL_CLASS_WARNING}" in result.output
    assert f"warning: {EMPTY_CLASS_WARNING}" in result.output
    assert "ignored under the root (not videos of a class): 1 bad-name," in result.output


def test_dry_run_shows_videos_per_class_and_warns_of_small_and_empty_classes(tmp_path, cli_runner):
    root = tmp_path / "raw"
    for class_name, num_videos in {"Tai Chi": 5, "Café-Tänze": 2, "Solo": 1}.items():
        for index in range(num_videos):
            touch(root / class_name / f"clip_{index}.MP4")
    (root / "Empty Class").mkdir()
    for name in ("README.txt", "Tai Chi/notes.txt", ".cache/x.mp4"):
        touch(root / name)
    out = tmp_path / "never-written"

    result = cli_runner("prepare", "folder", "--root", root, "--out", out, "--dry-run")

    assert result.exit_code == 0, result.output
    assert not out.exists()
    rows = {
        name: re.findall(rf"{name}\W+(\d+)\W+(\d+)\W+(\d+)\W+(\d+)", result.output)
        for name in ("Tai Chi", "Café-Tänze", "Solo")
    }
    # train, val, test, total: val 0.1 and test 0.2 of each class, at least one train
    assert rows == {
        "Tai Chi": [("3", "1", "1", "5")],
        "Café-Tänze": [("2", "0", "0", "2")],
        "Solo": [("1", "0", "0", "1")],
    }
    lines = result.output.splitlines()
    assert [line for line in lines if line.startswith("warning:")] == [
        "warning: class 'Café-Tänze' has 2 videos: too few for a test video at "
        "--test-fraction 0.2 (it needs 3), so it is trained on but never tested; add videos "
        "to it, or merge it into another class or remove its folder",
        f"warning: {SMALL_CLASS_WARNING}",
        f"warning: {EMPTY_CLASS_WARNING}",
    ]
    assert "  2 not-a-video: not a video file (.txt): README.txt, Tai Chi/notes.txt" in lines
    assert "  1 hidden: hidden folder, not searched: .cache/" in lines
    assert any(line.startswith("  1 empty-class-folder: ") for line in lines)


@pytest.mark.parametrize(
    ("val_fraction", "test_fraction", "needed"),
    [(0.1, 0.2, 3), (0.0, 0.1, 5), (0.1, 0.5, 2), (0.3, 0.05, 10), (0.1, 0.0, None)],
)
def test_a_class_needs_enough_videos_for_a_test_video(val_fraction, test_fraction, needed):
    assert folder.videos_for_a_test_video(val_fraction, test_fraction) == needed
    sizes = {"small": (needed or 2) - 1, "enough": needed or 2}
    warnings = folder.small_class_warnings(sizes, val_fraction, test_fraction)
    if needed is None:
        assert warnings == []  # no test split: nothing to warn of
    else:
        assert len(warnings) == (1 if needed > 1 else 0)
        assert all(w.startswith(f"class 'small' has {needed - 1} video") for w in warnings)
        assert all(f"(it needs {needed})" in w for w in warnings)


def test_a_folder_that_cannot_be_listed_is_reported(tmp_path, monkeypatch):
    root = make_folder_tree(tmp_path, {"a": 2})
    touch(root / "a" / "private" / "clip.mp4")
    real_sorted_entries = folder_tree._sorted_entries

    def sorted_entries(path):
        if Path(path).name == "private":
            raise PermissionError(13, "Permission denied", str(path))
        return real_sorted_entries(path)

    monkeypatch.setattr(folder_tree, "_sorted_entries", sorted_entries)
    listing = list_videos("folder", root)
    assert [(i.path, i.reason) for i in listing.ignored if i.path.startswith("a/")] == [
        ("a/private/", "unreadable")
    ]
    unreadable = next(i for i in listing.ignored if i.reason == "unreadable")
    assert unreadable.detail == "folder cannot be listed (Permission denied): fix its permissions"
    assert {entry.video_id for entry in listing.entries} == {"a/clip_000", "a/clip_001"}
