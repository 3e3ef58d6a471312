"""UCF101 source: the official split files, a tiny tree of real AVIs, malformed input."""

from __future__ import annotations

import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest
from repo_paths import TEST_DATA

from actrec.data.sources import list_videos, ucf101
from actrec.data.sources.base import SourceOptions
from actrec.errors import AnnotationError, ConfigError, DatasetError

OFFICIAL_SPLITS = TEST_DATA / "ucf101-splits"

TRAIN_VIDEOS = [
    "ApplyEyeMakeup/v_ApplyEyeMakeup_g08_c01.avi",
    "ApplyEyeMakeup/v_ApplyEyeMakeup_g08_c02.avi",
    "HandStandPushups/v_HandStandPushups_g08_c01.avi",
    "YoYo/v_YoYo_g25_c05.avi",
]
TEST_VIDEOS = [
    "ApplyEyeMakeup/v_ApplyEyeMakeup_g01_c01.avi",
    "HandStandPushups/v_HandStandPushups_g01_c01.avi",
    "YoYo/v_YoYo_g01_c01.avi",
]


def write_tiny_avi(path: Path, num_frames: int = 3) -> Path:
    """A real 32x24 MJPG AVI of `num_frames` flat grey frames."""
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 10.0, (32, 24))
    assert writer.isOpened(), f"cannot write {path}"
    for index in range(num_frames):
        writer.write(np.full((24, 32, 3), 40 * index, dtype=np.uint8))
    writer.release()
    return path


def official_lines(file_name: str, relative_paths: list[str]) -> list[str]:
    """The lines of an official list naming `relative_paths`, exactly as written there."""
    wanted = set(relative_paths)
    text = (OFFICIAL_SPLITS / file_name).read_bytes().decode()
    lines = [line for line in text.split("\r\n") if line.split(" ")[0] in wanted]
    assert len(lines) == len(relative_paths)
    return lines


def write_crlf(path: Path, lines: list[str]) -> Path:
    """Write `lines` with CRLF ends, as the official files are."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes("".join(f"{line}\r\n" for line in lines).encode())
    return path


def small_annotations(folder: Path) -> Path:
    """classInd.txt plus split-1 lists holding a few official lines (and a blank one)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(OFFICIAL_SPLITS / "classInd.txt", folder / "classInd.txt")
    write_crlf(folder / "trainlist01.txt", official_lines("trainlist01.txt", TRAIN_VIDEOS))
    write_crlf(folder / "testlist01.txt", [*official_lines("testlist01.txt", TEST_VIDEOS), ""])
    return folder


@pytest.fixture
def small_tree(tmp_path: Path) -> Path:
    """root/ucfTrainTestlist + root/UCF-101 with real tiny AVIs; the HandstandPushups
    folder (and one file) spelled as in the archive, one listed video missing."""
    root = tmp_path / "ucf101"
    small_annotations(root / "ucfTrainTestlist")
    videos = root / "UCF-101"
    for relative_path in TRAIN_VIDEOS + TEST_VIDEOS:
        if relative_path == "YoYo/v_YoYo_g01_c01.avi":
            continue  # missing on disk
        on_disk = relative_path.replace("HandStandPushups/", "HandstandPushups/")
        on_disk = on_disk.replace("v_HandStandPushups_g08", "v_HandstandPushups_g08")
        write_tiny_avi(videos / on_disk)
    return root


def entry_by_id(listing, video_id: str):
    return next(entry for entry in listing.entries if entry.video_id == video_id)


# ----------------------------------------------------------------------------- official


def test_copied_official_files_keep_crlf_line_ends():
    for name in ("classInd.txt", "trainlist01.txt", "testlist01.txt"):
        data = (OFFICIAL_SPLITS / name).read_bytes()
        assert data.count(b"\r\n") == data.count(b"\n") > 100


def test_official_split_1_has_the_published_counts(tmp_path):
    listing = list_videos("ucf101", tmp_path, SourceOptions(annotations=OFFICIAL_SPLITS))

    assert listing.dataset == "ucf101"
    assert listing.split_name == "1"
    assert len(listing.classes) == 101
    assert listing.counts_by_split() == {"train": 9537, "test": 3783}
    assert len({entry.video_id for entry in listing.entries}) == 13320
    assert listing.classes[0] == "ApplyEyeMakeup"
    assert listing.classes[100] == "YoYo"
    assert {entry.label for entry in listing.entries} == set(range(101))
    assert listing.annotation_files == (
        OFFICIAL_SPLITS / "classInd.txt",
        OFFICIAL_SPLITS / "trainlist01.txt",
        OFFICIAL_SPLITS / "testlist01.txt",
    )


def test_official_labels_are_zero_based_and_follow_the_class_folder(tmp_path):
    listing = list_videos("ucf101", tmp_path, SourceOptions(annotations=OFFICIAL_SPLITS))

    for entry in listing.entries:
        class_folder = entry.video_id.split("/")[0]
        assert listing.classes[entry.label].lower() == class_folder.lower()
    assert entry_by_id(listing, "ApplyEyeMakeup/v_ApplyEyeMakeup_g08_c01").label == 0
    assert entry_by_id(listing, "YoYo/v_YoYo_g25_c05").label == 100


def test_handstand_pushups_entries_get_the_classind_label(tmp_path):
    listing = list_videos("ucf101", tmp_path, SourceOptions(annotations=OFFICIAL_SPLITS))

    label = listing.classes.index("HandstandPushups")
    handstand = [entry for entry in listing.entries if entry.video_id.startswith("HandStand")]
    assert label == 36
    assert handstand
    assert all(entry.label == label for entry in handstand)
    assert {entry.split for entry in handstand} == {"train", "test"}


def test_official_entries_are_sorted_and_missing_files_keep_expected_paths(tmp_path):
    listing = list_videos("ucf101", tmp_path, SourceOptions(annotations=OFFICIAL_SPLITS))

    keys = [(entry.split, entry.video_id) for entry in listing.entries]
    assert keys == sorted(keys)
    first = listing.entries[0]
    assert first.split == "test"
    assert first.path == tmp_path / "ApplyEyeMakeup" / "v_ApplyEyeMakeup_g01_c01.avi"
    assert not first.path.exists()


def test_split_without_its_files_is_a_clear_error(tmp_path):
    options = SourceOptions(annotations=OFFICIAL_SPLITS, split="2")
    with pytest.raises(DatasetError, match=r"trainlist02\.txt not found") as error:
        list_videos("ucf101", tmp_path, options)
    assert "--annotations" in str(error.value)
    assert ucf101.SPLITS_URL in str(error.value)


@pytest.mark.parametrize("split", ["4", "0", "train", ""])
def test_unknown_split_lists_the_valid_ones(tmp_path, split):
    options = SourceOptions(annotations=OFFICIAL_SPLITS, split=split)
    with pytest.raises(ConfigError, match="choose one of: 1, 2, 3"):
        list_videos("ucf101", tmp_path, options)


def test_zero_padded_split_id_names_the_same_split(tmp_path):
    options = SourceOptions(annotations=OFFICIAL_SPLITS, split="01")
    assert list_videos("ucf101", tmp_path, options).split_name == "1"


# ----------------------------------------------------------------------------- small tree


def test_small_tree_counts_labels_and_splits(small_tree):
    listing = list_videos("ucf101", small_tree)

    assert listing.counts_by_split() == {"train": 4, "test": 3}
    assert listing.entries_in("val") == []
    labels = {entry.video_id: entry.label for entry in listing.entries}
    assert labels == {
        "ApplyEyeMakeup/v_ApplyEyeMakeup_g08_c01": 0,
        "ApplyEyeMakeup/v_ApplyEyeMakeup_g08_c02": 0,
        "ApplyEyeMakeup/v_ApplyEyeMakeup_g01_c01": 0,
        "HandStandPushups/v_HandStandPushups_g08_c01": 36,
        "HandStandPushups/v_HandStandPushups_g01_c01": 36,
        "YoYo/v_YoYo_g25_c05": 100,
        "YoYo/v_YoYo_g01_c01": 100,
    }
    assert [entry.split for entry in listing.entries] == ["test"] * 3 + ["train"] * 4
    assert listing.annotation_files[0] == small_tree / "ucfTrainTestlist" / "classInd.txt"


def test_small_tree_resolves_folder_and_file_names_case_insensitively(small_tree):
    listing = list_videos("ucf101", small_tree)
    videos = small_tree / "UCF-101"

    train = entry_by_id(listing, "HandStandPushups/v_HandStandPushups_g08_c01")
    test = entry_by_id(listing, "HandStandPushups/v_HandStandPushups_g01_c01")
    assert train.path == videos / "HandstandPushups" / "v_HandstandPushups_g08_c01.avi"
    assert test.path == videos / "HandstandPushups" / "v_HandStandPushups_g01_c01.avi"
    assert train.path.is_file() and test.path.is_file()


def test_small_tree_paths_point_at_the_real_videos(small_tree):
    listing = list_videos("ucf101", small_tree)

    present = [entry for entry in listing.entries if entry.video_id != "YoYo/v_YoYo_g01_c01"]
    for entry in present:
        assert entry.path.is_file()
        capture = cv2.VideoCapture(str(entry.path))
        assert capture.isOpened()
        assert capture.read()[0]
        capture.release()


def test_missing_video_is_listed_with_its_expected_path(small_tree):
    listing = list_videos("ucf101", small_tree)

    missing = entry_by_id(listing, "YoYo/v_YoYo_g01_c01")
    assert missing.path == small_tree / "UCF-101" / "YoYo" / "v_YoYo_g01_c01.avi"
    assert not missing.path.exists()
    assert missing.split == "test"
    assert missing.label == 100


def test_videos_directly_under_root_without_ucf101_folder(tmp_path):
    small_annotations(tmp_path / "UCF101TrainTestSplits-RecognitionTask" / "ucfTrainTestlist")
    write_tiny_avi(tmp_path / "YoYo" / "v_YoYo_g25_c05.avi")

    listing = list_videos("ucf101", tmp_path)

    assert entry_by_id(listing, "YoYo/v_YoYo_g25_c05").path == (
        tmp_path / "YoYo" / "v_YoYo_g25_c05.avi"
    )
    assert listing.annotation_files[1].parent.name == "ucfTrainTestlist"


def test_annotations_beside_the_root_are_found(tmp_path):
    small_annotations(tmp_path / "ucfTrainTestlist")
    root = tmp_path / "UCF-101"
    root.mkdir()

    listing = list_videos("ucf101", root)

    assert listing.counts_by_split() == {"train": 4, "test": 3}


def test_annotations_option_accepts_a_file_in_the_folder(tmp_path):
    folder = small_annotations(tmp_path / "lists")
    options = SourceOptions(annotations=folder / "classInd.txt")
    assert len(list_videos("ucf101", tmp_path, options).entries) == 7


def test_missing_annotations_name_where_it_looked_and_what_to_do(tmp_path):
    with pytest.raises(DatasetError) as error:
        list_videos("ucf101", tmp_path)
    message = str(error.value)
    assert str(tmp_path / "ucfTrainTestlist") in message
    assert ucf101.SPLITS_URL in message
    assert "--annotations" in message


def test_annotations_option_without_classind_is_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match=r"classInd\.txt not found in .*empty"):
        list_videos("ucf101", tmp_path, SourceOptions(annotations=tmp_path / "empty"))


# ----------------------------------------------------------------------------- malformed


def annotations_with_train_line(tmp_path: Path, bad_line: str) -> Path:
    """Small annotations whose trainlist gets `bad_line` as its third line."""
    folder = small_annotations(tmp_path / "lists")
    lines = official_lines("trainlist01.txt", TRAIN_VIDEOS[:2])
    write_crlf(folder / "trainlist01.txt", [*lines, bad_line])
    return folder


@pytest.mark.parametrize(
    ("bad_line", "expected"),
    [
        ("ApplyEyeMakeup/v_x.avi notanumber", "optionally followed by the 1-based class index"),
        ("ApplyEyeMakeup/v_x.avi 5", "label 1 (ApplyEyeMakeup in classInd.txt), not 5"),
        ("NoSuchClass/v_x.avi 1", "a class folder named in classInd.txt"),
        ("v_ApplyEyeMakeup_g08_c03.avi 1", "'<Class>/<video>.avi'"),
        ("ApplyEyeMakeup/v_x.avi 1 extra", "'<Class>/<video>.avi'"),
        ("ApplyEyeMakeup/v_ApplyEyeMakeup_g08_c01.avi 1", "each video listed once"),
    ],
)
def test_malformed_train_line_names_file_and_line(tmp_path, bad_line, expected):
    folder = annotations_with_train_line(tmp_path, bad_line)

    with pytest.raises(AnnotationError) as error:
        list_videos("ucf101", tmp_path, SourceOptions(annotations=folder))

    assert error.value.line_number == 3
    assert error.value.path == folder / "trainlist01.txt"
    assert "trainlist01.txt:3:" in str(error.value)
    assert expected in str(error.value)


def test_test_line_with_a_wrong_label_is_an_error(tmp_path):
    folder = small_annotations(tmp_path / "lists")
    write_crlf(folder / "testlist01.txt", ["YoYo/v_YoYo_g01_c01.avi 3"])
    with pytest.raises(AnnotationError, match=r"testlist01\.txt:1:.*label 101"):
        list_videos("ucf101", tmp_path, SourceOptions(annotations=folder))


def test_video_in_both_train_and_test_is_an_error(tmp_path):
    folder = small_annotations(tmp_path / "lists")
    write_crlf(folder / "testlist01.txt", [TRAIN_VIDEOS[0]])
    with pytest.raises(AnnotationError, match=r"testlist01\.txt:1:.*already listed in trainlist01"):
        list_videos("ucf101", tmp_path, SourceOptions(annotations=folder))


@pytest.mark.parametrize(
    "lines",
    [["1 ApplyEyeMakeup", "3 ApplyLipstick"], ["1 ApplyEyeMakeup", "two Archery"]],
)
def test_malformed_class_index_names_file_and_line(tmp_path, lines):
    folder = small_annotations(tmp_path / "lists")
    write_crlf(folder / "classInd.txt", lines)
    with pytest.raises(AnnotationError, match=r"classInd\.txt:2:.*1-based indices"):
        list_videos("ucf101", tmp_path, SourceOptions(annotations=folder))
