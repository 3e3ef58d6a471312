"""Synthetic source: the generated UCF101-style tree, listed with the UCF101 parser."""

from __future__ import annotations

from pathlib import Path

import pytest

from actrec.data.sources import list_videos
from actrec.data.sources.base import SourceOptions
from actrec.errors import AnnotationError, ConfigError, DatasetError

CLASSES = ("MoveLeft", "MoveRight", "Rotate")
NUM_GROUPS = 3
NUM_CLIPS = 2
TEST_GROUPS = (1,)


def video_name(class_name: str, group: int, clip: int) -> str:
    return f"{class_name}/v_{class_name}_g{group:02d}_c{clip:02d}.avi"


def write_crlf(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes("".join(f"{line}\r\n" for line in lines).encode())


def make_synthetic_tree(root: Path) -> Path:
    """What `actrec synthetic ROOT` writes: tiny videos in class folders and
    root/splits/{classInd,trainlist01,testlist01}.txt (CRLF, unlabelled test list)."""
    train_lines, test_lines = [], []
    for label, class_name in enumerate(CLASSES, start=1):
        for group in range(1, NUM_GROUPS + 1):
            for clip in range(1, NUM_CLIPS + 1):
                name = video_name(class_name, group, clip)
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                (root / name).write_bytes(b"RIFF tiny")
                if group in TEST_GROUPS:
                    test_lines.append(name)
                else:
                    train_lines.append(f"{name} {label}")
    splits = root / "splits"
    write_crlf(splits / "classInd.txt", [f"{i} {name}" for i, name in enumerate(CLASSES, 1)])
    write_crlf(splits / "trainlist01.txt", train_lines)
    write_crlf(splits / "testlist01.txt", test_lines)
    return root


def test_lists_the_generated_tree(tmp_path):
    root = make_synthetic_tree(tmp_path / "synthetic")

    listing = list_videos("synthetic", root)

    assert listing.dataset == "synthetic"
    assert listing.split_name == "1"
    assert listing.classes == CLASSES
    assert listing.counts_by_split() == {"train": 12, "test": 6}
    assert listing.annotation_files == (
        root / "splits" / "classInd.txt",
        root / "splits" / "trainlist01.txt",
        root / "splits" / "testlist01.txt",
    )


def test_labels_paths_and_order(tmp_path):
    root = make_synthetic_tree(tmp_path / "synthetic")

    listing = list_videos("synthetic", root)

    for entry in listing.entries:
        class_name = entry.video_id.split("/")[0]
        assert entry.label == CLASSES.index(class_name)
        assert entry.path == root / f"{entry.video_id}.avi"
        assert entry.path.is_file()
        assert (entry.split == "test") == ("_g01_" in entry.video_id)
    keys = [(entry.split, entry.video_id) for entry in listing.entries]
    assert keys == sorted(keys)
    assert listing.entries[0].video_id == "MoveLeft/v_MoveLeft_g01_c01"


def test_missing_generated_video_keeps_its_expected_path(tmp_path):
    root = make_synthetic_tree(tmp_path / "synthetic")
    (root / video_name("Rotate", 2, 1)).unlink()

    listing = list_videos("synthetic", root)

    entry = next(e for e in listing.entries if e.video_id == "Rotate/v_Rotate_g02_c01")
    assert entry.path == root / "Rotate" / "v_Rotate_g02_c01.avi"
    assert not entry.path.exists()


def test_missing_set_says_how_to_generate_it(tmp_path):
    with pytest.raises(DatasetError) as error:
        list_videos("synthetic", tmp_path)
    message = str(error.value)
    assert str(tmp_path / "splits" / "classInd.txt") in message
    assert f"actrec synthetic {tmp_path}" in message
    assert "actrec prepare synthetic" in message


def test_missing_split_list_says_how_to_generate_it(tmp_path):
    root = make_synthetic_tree(tmp_path / "synthetic")
    (root / "splits" / "testlist01.txt").unlink()
    with pytest.raises(DatasetError, match=r"testlist01\.txt not found.*actrec synthetic"):
        list_videos("synthetic", root)


def test_only_split_1_exists(tmp_path):
    root = make_synthetic_tree(tmp_path / "synthetic")
    assert list_videos("synthetic", root, SourceOptions(split="1")).split_name == "1"
    with pytest.raises(ConfigError, match="unknown synthetic split '2'; choose one of: 1"):
        list_videos("synthetic", root, SourceOptions(split="2"))


def test_malformed_line_is_reported_by_the_shared_parser(tmp_path):
    root = make_synthetic_tree(tmp_path / "synthetic")
    write_crlf(root / "splits" / "trainlist01.txt", ["MoveLeft/v_MoveLeft_g02_c01.avi 2"])
    with pytest.raises(AnnotationError, match=r"trainlist01\.txt:1:"):
        list_videos("synthetic", root)
