"""Kinetics source: train / val / test CSVs, clips in class folders or flat."""

from __future__ import annotations

from pathlib import Path

import pytest

from actrec.data.sources import kinetics, list_videos
from actrec.data.sources.base import UNLABELLED, SourceOptions
from actrec.errors import AnnotationError, ConfigError, DatasetError

HEADER = "label,youtube_id,time_start,time_end,split,is_cc"
TRAIN_ROWS = [
    "playing cards,ZZ2ygq6kAic,14,24,train,0",
    "abseiling,--Ntz3nv-yY,0,10,train,0",
    '"air drumming",-VtLx-mcPds,97,107,train,1',
    "abseiling,0wCCiVYiSPo,10,20,train,0",
]
VAL_ROWS = [
    "abseiling,3E7Jib8Yq5M,102,112,val,0",
    "air drumming,5pIOR7Jq8FM,7,17,val,0",
    "playing cards,rXvNB6fxBMI,30,40,val,0",
]
TEST_HEADER = "youtube_id,time_start,time_end,split"
TEST_ROWS = ["-0BUzebRplw,4,14,test", "aaa_bbb-CCC,1,11,test"]


def write_csv(path: Path, header: str, rows: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"tiny")
    return path


def make_kinetics_tree(root: Path) -> Path:
    """annotations/{train,validate,test}.csv; train clips in class folders (one spelled
    with underscores), val clips flat in one folder with one missing, test clips flat
    directly under root."""
    write_csv(root / "annotations" / "train.csv", HEADER, TRAIN_ROWS)
    write_csv(root / "annotations" / "validate.csv", HEADER, VAL_ROWS)
    write_csv(root / "annotations" / "test.csv", TEST_HEADER, TEST_ROWS)
    touch(root / "train" / "abseiling" / "--Ntz3nv-yY_000000_000010.mp4")
    touch(root / "train" / "abseiling" / "0wCCiVYiSPo_000010_000020.mp4")
    touch(root / "train" / "air_drumming" / "-VtLx-mcPds_000097_000107.mp4")
    touch(root / "train" / "playing cards" / "ZZ2ygq6kAic_000014_000024.webm")
    touch(root / "val" / "3E7Jib8Yq5M_000102_000112.mp4")
    touch(root / "val" / "5pIOR7Jq8FM_000007_000017.mkv")
    touch(root / "-0BUzebRplw_000004_000014.mp4")
    touch(root / "aaa_bbb-CCC_000001_000011.mp4")
    touch(root / "train" / "abseiling" / "notes.txt")
    return root


def entry_by_id(listing, video_id: str):
    return next(entry for entry in listing.entries if entry.video_id == video_id)


def test_classes_come_sorted_from_the_train_csv(tmp_path):
    listing = list_videos("kinetics", make_kinetics_tree(tmp_path))

    assert listing.dataset == "kinetics"
    assert listing.classes == ("abseiling", "air drumming", "playing cards")
    assert listing.split_name == "3"
    assert listing.annotation_files == tuple(
        tmp_path / "annotations" / name for name in ("train.csv", "validate.csv", "test.csv")
    )


def test_counts_labels_and_order(tmp_path):
    listing = list_videos("kinetics", make_kinetics_tree(tmp_path))

    assert listing.counts_by_split() == {"train": 4, "val": 3, "test": 2}
    labels = {entry.video_id: (entry.split, entry.label) for entry in listing.entries}
    assert labels["--Ntz3nv-yY_000000_000010"] == ("train", 0)
    assert labels["-VtLx-mcPds_000097_000107"] == ("train", 1)
    assert labels["ZZ2ygq6kAic_000014_000024"] == ("train", 2)
    assert labels["5pIOR7Jq8FM_000007_000017"] == ("val", 1)
    assert labels["-0BUzebRplw_000004_000014"] == ("test", UNLABELLED)
    assert labels["aaa_bbb-CCC_000001_000011"] == ("test", UNLABELLED)
    keys = [(entry.split, entry.video_id) for entry in listing.entries]
    assert keys == sorted(keys)


def test_clips_are_found_in_class_folders_and_flat(tmp_path):
    root = make_kinetics_tree(tmp_path)

    listing = list_videos("kinetics", root)

    assert entry_by_id(listing, "-VtLx-mcPds_000097_000107").path == (
        root / "train" / "air_drumming" / "-VtLx-mcPds_000097_000107.mp4"
    )
    assert entry_by_id(listing, "ZZ2ygq6kAic_000014_000024").path == (
        root / "train" / "playing cards" / "ZZ2ygq6kAic_000014_000024.webm"
    )
    assert entry_by_id(listing, "5pIOR7Jq8FM_000007_000017").path == (
        root / "val" / "5pIOR7Jq8FM_000007_000017.mkv"
    )
    assert entry_by_id(listing, "-0BUzebRplw_000004_000014").path == (
        root / "-0BUzebRplw_000004_000014.mp4"
    )
    present = [entry for entry in listing.entries if entry.path.exists()]
    assert len(present) == 8


def test_missing_clip_is_listed_where_it_was_expected(tmp_path):
    root = make_kinetics_tree(tmp_path)

    listing = list_videos("kinetics", root)

    missing = entry_by_id(listing, "rXvNB6fxBMI_000030_000040")
    assert missing.split == "val"
    assert missing.label == 2
    assert missing.path == root / "val" / "rXvNB6fxBMI_000030_000040.mp4"
    assert not missing.path.exists()


def test_missing_train_clip_is_expected_in_its_class_folder(tmp_path):
    root = make_kinetics_tree(tmp_path)
    (root / "train" / "air_drumming" / "-VtLx-mcPds_000097_000107.mp4").unlink()

    listing = list_videos("kinetics", root)

    assert entry_by_id(listing, "-VtLx-mcPds_000097_000107").path == (
        root / "train" / "air_drumming" / "-VtLx-mcPds_000097_000107.mp4"
    )


def test_clip_named_by_youtube_id_only_is_found(tmp_path):
    root = make_kinetics_tree(tmp_path)
    touch(root / "downloads" / "rXvNB6fxBMI.mp4")

    listing = list_videos("kinetics", root)

    assert entry_by_id(listing, "rXvNB6fxBMI_000030_000040").path == (
        root / "downloads" / "rXvNB6fxBMI.mp4"
    )


def test_csvs_directly_under_root_with_other_names(tmp_path):
    write_csv(tmp_path / "kinetics_400_train.csv", HEADER, TRAIN_ROWS)
    write_csv(tmp_path / "kinetics_400_val.csv", HEADER, VAL_ROWS)

    listing = list_videos("kinetics", tmp_path)

    assert listing.counts_by_split() == {"train": 4, "val": 3}


def test_a_single_csv_takes_splits_from_its_split_column(tmp_path):
    path = write_csv(tmp_path / "k.csv", HEADER, TRAIN_ROWS + VAL_ROWS)

    listing = list_videos("kinetics", tmp_path, SourceOptions(annotations=path))

    assert listing.counts_by_split() == {"train": 4, "val": 3}
    assert listing.annotation_files == (path,)


def test_val_only_takes_classes_from_its_labels(tmp_path):
    path = write_csv(tmp_path / "validate.csv", HEADER, VAL_ROWS)
    listing = list_videos("kinetics", tmp_path, SourceOptions(annotations=path))
    assert listing.classes == ("abseiling", "air drumming", "playing cards")
    assert listing.counts_by_split() == {"val": 3}


def test_exact_duplicate_rows_are_listed_once(tmp_path):
    root = make_kinetics_tree(tmp_path)
    write_csv(root / "annotations" / "train.csv", HEADER, TRAIN_ROWS + TRAIN_ROWS[:1])
    assert list_videos("kinetics", root).counts_by_split()["train"] == 4


def test_clip_listed_with_two_labels_is_an_error(tmp_path):
    root = make_kinetics_tree(tmp_path)
    write_csv(
        root / "annotations" / "train.csv",
        HEADER,
        [*TRAIN_ROWS, "air drumming,ZZ2ygq6kAic,14,24,train,0"],
    )
    with pytest.raises(AnnotationError, match=r"train\.csv:6:.*already train 'playing cards'"):
        list_videos("kinetics", root)


def test_val_label_not_in_train_is_an_error(tmp_path):
    root = make_kinetics_tree(tmp_path)
    write_csv(root / "annotations" / "validate.csv", HEADER, [*VAL_ROWS, "juggling,x,1,11,val,0"])
    with pytest.raises(AnnotationError) as error:
        list_videos("kinetics", root)
    assert error.value.line_number == 5
    assert "validate.csv:5:" in str(error.value)
    assert "a label that occurs in the train CSV" in str(error.value)


@pytest.mark.parametrize(
    ("bad_row", "expected"),
    [
        ("abseiling,abc,ten,20,train,0", "whole-second time_start <= time_end"),
        ("abseiling,abc,20,10,train,0", "whole-second time_start <= time_end"),
        ("abseiling,,0,10,train,0", "a YouTube id"),
        (",abc,0,10,train,0", "a label for every train clip"),
        ("abseiling,abc,0,10", "6 columns as in the header"),
    ],
)
def test_malformed_row_names_file_and_line(tmp_path, bad_row, expected):
    root = make_kinetics_tree(tmp_path)
    write_csv(root / "annotations" / "train.csv", HEADER, [*TRAIN_ROWS[:2], "", bad_row])

    with pytest.raises(AnnotationError) as error:
        list_videos("kinetics", root)

    assert error.value.line_number == 5
    assert "train.csv:5:" in str(error.value)
    assert expected in str(error.value)


def test_csv_without_the_required_header_is_an_error(tmp_path):
    root = make_kinetics_tree(tmp_path)
    write_csv(root / "annotations" / "test.csv", "id,start,end", ["a,1,2"])
    with pytest.raises(AnnotationError, match=r"test\.csv:1:.*youtube_id, time_start"):
        list_videos("kinetics", root)


def test_missing_annotations_name_where_it_looked(tmp_path):
    with pytest.raises(DatasetError) as error:
        list_videos("kinetics", tmp_path)
    message = str(error.value)
    assert str(tmp_path / "annotations") in message
    assert kinetics.ANNOTATIONS_URL in message
    assert "--annotations" in message


def test_two_csvs_for_one_split_is_an_error(tmp_path):
    root = make_kinetics_tree(tmp_path)
    write_csv(root / "annotations" / "kinetics_train.csv", HEADER, TRAIN_ROWS)
    with pytest.raises(DatasetError, match="several train CSVs"):
        list_videos("kinetics", root)


def test_variant_option_checks_the_class_count(tmp_path):
    root = make_kinetics_tree(tmp_path)
    with pytest.raises(DatasetError, match="hold 3 classes, not 400"):
        list_videos("kinetics", root, SourceOptions(split="400"))
    with pytest.raises(ConfigError, match="choose one of: 400, 600, 700"):
        list_videos("kinetics", root, SourceOptions(split="1"))


def test_linked_split_folder_is_indexed_and_a_link_loop_is_harmless(tmp_path):
    storage = tmp_path / "storage"
    touch(storage / "3E7Jib8Yq5M_000102_000112.mp4")
    (storage / "loop").symlink_to(storage, target_is_directory=True)
    root = tmp_path / "kinetics"
    write_csv(root / "annotations" / "validate.csv", HEADER, VAL_ROWS)
    (root / "val").symlink_to(storage, target_is_directory=True)

    listing = list_videos("kinetics", root)

    assert entry_by_id(listing, "3E7Jib8Yq5M_000102_000112").path == (
        root / "val" / "3E7Jib8Yq5M_000102_000112.mp4"
    )
