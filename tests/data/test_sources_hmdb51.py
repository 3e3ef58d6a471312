"""HMDB51 source: per-class split files with 0 / 1 / 2 codes, trailing spaces."""

from __future__ import annotations

from pathlib import Path

import pytest

from actrec.data.sources import hmdb51, list_videos
from actrec.data.sources.base import SourceOptions
from actrec.errors import AnnotationError, ConfigError, DatasetError

# class -> split id -> [(video file, code)]; code 1 train, 2 test, 0 unused
SPLITS = {
    "pour": {
        "1": [
            ("Bartender_pour_u_cm_np1_fr_goo_0.avi", "1"),
            ("Glass_pour_f_cm_np1_ri_med_1.avi", "2"),
        ],
        "2": [
            ("Bartender_pour_u_cm_np1_fr_goo_0.avi", "2"),
            ("Glass_pour_f_cm_np1_ri_med_1.avi", "1"),
        ],
    },
    "brush_hair": {
        "1": [
            ("April_09_brush_hair_u_nm_np1_ba_goo_0.avi", "1"),
            ("April_09_brush_hair_u_nm_np1_ba_goo_1.avi", "1"),
            ("Blonde_being_brushed_brush_hair_f_nm_np2_ri_med_0.avi", "2"),
            ("Brushing_my_Long_Hair_brush_hair_u_nm_np1_ba_goo_0.avi", "0"),
        ],
        "2": [
            ("April_09_brush_hair_u_nm_np1_ba_goo_0.avi", "2"),
            ("April_09_brush_hair_u_nm_np1_ba_goo_1.avi", "0"),
            ("Blonde_being_brushed_brush_hair_f_nm_np2_ri_med_0.avi", "1"),
            ("Brushing_my_Long_Hair_brush_hair_u_nm_np1_ba_goo_0.avi", "1"),
        ],
    },
    "cartwheel": {
        "1": [("(Rad)Schlag_die_Bank!_cartwheel_f_cm_np1_le_med_0.avi", "1")],
        "2": [("(Rad)Schlag_die_Bank!_cartwheel_f_cm_np1_le_med_0.avi", "2")],
    },
}


def write_split_file(path: Path, rows: list[tuple[str, str]]) -> Path:
    """A split file as distributed: "video.avi N " lines (trailing space), LF ends."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{name} {code} \n" for name, code in rows))
    return path


def make_hmdb_tree(root: Path, split_folder: str = "testTrainMulti_7030_splits") -> Path:
    """root/<class>/<video>.avi (tiny files, one missing) plus the split files."""
    for class_name, splits in SPLITS.items():
        for split_id, rows in splits.items():
            write_split_file(root / split_folder / f"{class_name}_test_split{split_id}.txt", rows)
        for name, _ in splits["1"]:
            if name != "Glass_pour_f_cm_np1_ri_med_1.avi":
                (root / class_name).mkdir(parents=True, exist_ok=True)
                (root / class_name / name).write_bytes(b"tiny")
    return root


def test_lists_split_1(tmp_path):
    root = make_hmdb_tree(tmp_path)

    listing = list_videos("hmdb51", root)

    assert listing.dataset == "hmdb51"
    assert listing.split_name == "1"
    assert listing.classes == ("brush_hair", "cartwheel", "pour")
    assert listing.counts_by_split() == {"train": 4, "test": 2}
    ids = {entry.video_id: (entry.label, entry.split) for entry in listing.entries}
    assert ids == {
        "brush_hair/April_09_brush_hair_u_nm_np1_ba_goo_0": (0, "train"),
        "brush_hair/April_09_brush_hair_u_nm_np1_ba_goo_1": (0, "train"),
        "brush_hair/Blonde_being_brushed_brush_hair_f_nm_np2_ri_med_0": (0, "test"),
        "cartwheel/(Rad)Schlag_die_Bank!_cartwheel_f_cm_np1_le_med_0": (1, "train"),
        "pour/Bartender_pour_u_cm_np1_fr_goo_0": (2, "train"),
        "pour/Glass_pour_f_cm_np1_ri_med_1": (2, "test"),
    }
    keys = [(entry.split, entry.video_id) for entry in listing.entries]
    assert keys == sorted(keys)
    assert len(listing.annotation_files) == 3


def test_unused_videos_are_left_out(tmp_path):
    listing = list_videos("hmdb51", make_hmdb_tree(tmp_path))
    assert all("Brushing_my_Long_Hair" not in entry.video_id for entry in listing.entries)


def test_paths_and_missing_video(tmp_path):
    root = make_hmdb_tree(tmp_path)

    listing = list_videos("hmdb51", root)

    for entry in listing.entries:
        assert entry.path == root / f"{entry.video_id}.avi"
    missing = [entry for entry in listing.entries if not entry.path.exists()]
    assert [entry.video_id for entry in missing] == ["pour/Glass_pour_f_cm_np1_ri_med_1"]


def test_split_2_reads_its_own_files(tmp_path):
    listing = list_videos("hmdb51", make_hmdb_tree(tmp_path), SourceOptions(split="2"))

    assert listing.split_name == "2"
    assert listing.counts_by_split() == {"train": 3, "test": 3}
    assert all(path.name.endswith("_test_split2.txt") for path in listing.annotation_files)


def test_split_files_in_a_splits_folder_or_given_with_annotations(tmp_path):
    root = make_hmdb_tree(tmp_path / "a", split_folder="splits")
    assert len(list_videos("hmdb51", root).entries) == 6

    other = make_hmdb_tree(tmp_path / "b", split_folder="elsewhere")
    options = SourceOptions(annotations=other / "elsewhere")
    assert len(list_videos("hmdb51", other, options).entries) == 6


def test_any_number_of_classes(tmp_path):
    write_split_file(tmp_path / "splits" / "wave_test_split1.txt", [("w.avi", "1")])
    listing = list_videos("hmdb51", tmp_path)
    assert listing.classes == ("wave",)
    assert listing.entries[0].video_id == "wave/w"


def test_missing_split_files_name_where_it_looked(tmp_path):
    with pytest.raises(DatasetError) as error:
        list_videos("hmdb51", tmp_path)
    message = str(error.value)
    assert str(tmp_path / "testTrainMulti_7030_splits") in message
    assert hmdb51.SPLITS_URL in message
    assert "--annotations" in message


def test_annotations_option_without_split_files(tmp_path):
    with pytest.raises(DatasetError, match="given with --annotations"):
        list_videos("hmdb51", tmp_path, SourceOptions(annotations=tmp_path))


def test_split_whose_files_are_missing_is_an_error(tmp_path):
    root = make_hmdb_tree(tmp_path)
    (root / "testTrainMulti_7030_splits" / "pour_test_split2.txt").unlink()

    with pytest.raises(DatasetError, match=r"split 2 files missing .*pour_test_split2\.txt"):
        list_videos("hmdb51", root, SourceOptions(split="2"))
    with pytest.raises(DatasetError, match="split 3 files missing"):
        list_videos("hmdb51", root, SourceOptions(split="3"))


def test_unknown_split_lists_the_valid_ones(tmp_path):
    with pytest.raises(ConfigError, match="choose one of: 1, 2, 3"):
        list_videos("hmdb51", make_hmdb_tree(tmp_path), SourceOptions(split="7030"))


@pytest.mark.parametrize(
    "bad_line",
    ["April_09_brush_hair_u_nm_np1_ba_goo_9.avi 3", "no_code.avi", "x.avi one", "a/b.avi 1"],
)
def test_malformed_line_names_file_and_line(tmp_path, bad_line):
    root = make_hmdb_tree(tmp_path)
    path = root / "testTrainMulti_7030_splits" / "brush_hair_test_split1.txt"
    path.write_text(path.read_text() + "\n" + bad_line + "\n")

    with pytest.raises(AnnotationError) as error:
        list_videos("hmdb51", root)

    assert error.value.line_number == 6
    assert "brush_hair_test_split1.txt:6:" in str(error.value)
    assert "N = 0 (unused), 1 (train) or 2 (test)" in str(error.value)


def test_video_listed_twice_is_an_error(tmp_path):
    root = make_hmdb_tree(tmp_path)
    path = root / "testTrainMulti_7030_splits" / "pour_test_split1.txt"
    path.write_text(path.read_text() + "Glass_pour_f_cm_np1_ri_med_1.avi 1\n")
    with pytest.raises(AnnotationError, match=r"pour_test_split1\.txt:3:.*already on line 2"):
        list_videos("hmdb51", root)
