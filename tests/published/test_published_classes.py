"""Built-in class lists of published models, class files, and their errors."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from repo_paths import TEST_DATA

from actrec.data.sources import list_videos
from actrec.data.sources.ucf101 import class_index_from
from actrec.errors import ConfigError
from actrec.published.class_lists import (
    CLASS_LISTS,
    CLASSES_FOLDER,
    published_class_names,
    read_class_file,
    resolve_class_names,
)

CLASS_INDEX = TEST_DATA / "ucf101-splits" / "classInd.txt"
EXPECTED_COUNTS = {
    "kinetics400": 400,
    "kinetics600": 600,
    "something-something-v2": 174,
    "jester": 27,
    "jester-mmaction2": 27,
    "ucf101": 101,
    "hmdb51": 51,
    "hmdb51-tsn": 51,
}
# Kinetics CSV rows in the official form, some labels quoted: the raw label column actrec's
# source reads (TSM's and mmaction2's scripts strip such '"' by hand; csv reading drops them).
KINETICS_RAW_ROWS = [
    '"passing American football (in game)",dcTa8wq1ZWk,3,13,train',
    "massaging person's head,7T9Z6BjtMG8,20,30,train",
    '"skiing (not slalom or crosscountry)",5UmQsk1nBk4,0,10,train',
    "skiing crosscountry,ZXedNqJZoGU,41,51,train",
    '"tying knot (not on a tie)",HXvZ2vkQyR4,0,10,train',
    "abseiling,--Ntz3nv-yY,0,10,train",
]
KINETICS_HEADER = "label,youtube_id,time_start,time_end,split"


def write_text(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding=encoding, newline="")
    return path


def kinetics_classes_from_csv(root: Path, csv_text: str) -> tuple[str, ...]:
    """The classes actrec's Kinetics source finds in a train CSV (videos all missing)."""
    write_text(root / "annotations" / "train.csv", csv_text)
    return list_videos("kinetics", root).classes


# ----------------------------------------------------------------------------- the lists


def test_class_lists_are_the_shipped_files():
    shipped = {path.stem for path in CLASSES_FOLDER.glob("*.txt")}

    assert set(CLASS_LISTS) == shipped
    assert set(CLASS_LISTS) == set(EXPECTED_COUNTS)


@pytest.mark.parametrize("name", sorted(EXPECTED_COUNTS))
def test_each_list_has_its_dataset_count_without_duplicates(name):
    names = published_class_names(name)

    assert len(names) == EXPECTED_COUNTS[name]
    assert len(set(names)) == len(names)
    assert all(name == name.strip() and name and not name.startswith("#") for name in names)


@pytest.mark.parametrize("name", sorted(EXPECTED_COUNTS))
def test_each_file_says_where_it_comes_from(name):
    text = (CLASSES_FOLDER / f"{name}.txt").read_text(encoding="utf-8")
    header = [line for line in text.splitlines() if line.startswith("#")]

    assert header, "a header of # lines"
    assert text.splitlines()[: len(header)] == header, "the header comes first"
    assert any("Names and order:" in line for line in header)
    assert any("commit" in line for line in header), "the source commit"
    # The file reads back as exactly its non-comment lines, in order.
    body = [line for line in text.splitlines()[len(header) :] if line.strip()]
    assert list(published_class_names(name)) == body


def test_ucf101_is_class_ind_order():
    assert published_class_names("ucf101") == class_index_from(CLASS_INDEX).names


def test_class_ind_read_as_a_numbered_class_file_is_ucf101():
    assert read_class_file(CLASS_INDEX) == published_class_names("ucf101")


def test_jester_orders_are_tsm_sorted_and_mmaction2_csv_order():
    tsm = published_class_names("jester")
    mmaction2 = published_class_names("jester-mmaction2")

    assert tsm == tuple(sorted(mmaction2))
    assert tsm != mmaction2
    assert tsm[0] == "Doing other things" and mmaction2[0] == "Swiping Left"


def test_hmdb51_is_the_order_actrec_prepare_gives(tmp_path):
    tsn = published_class_names("hmdb51-tsn")
    for class_name in reversed(tsn):  # written in another order: the source sorts
        write_text(tmp_path / "splits" / f"{class_name}_test_split1.txt", "a.avi 1 \nb.avi 2 \n")

    listing = list_videos("hmdb51", tmp_path)

    assert listing.classes == published_class_names("hmdb51")


def test_hmdb51_tsn_order_differs_only_in_two_swaps():
    tsn = published_class_names("hmdb51-tsn")
    sorted_names = published_class_names("hmdb51")

    assert set(tsn) == set(sorted_names)
    differing = [
        index for index, (a, b) in enumerate(zip(tsn, sorted_names, strict=True)) if a != b
    ]
    assert [tsn[index] for index in differing] == ["kick_ball", "kick", "sword_exercise", "sword"]


# ----------------------------------------------------------------------------- Kinetics


def test_kinetics_names_are_what_actrec_reads_from_raw_csv_labels(tmp_path):
    published = published_class_names("kinetics400")

    classes = kinetics_classes_from_csv(
        tmp_path, "\n".join([KINETICS_HEADER, *KINETICS_RAW_ROWS]) + "\n"
    )

    assert len(classes) == len(KINETICS_RAW_ROWS)
    assert set(classes) <= set(published), "actrec's spelling is the list's spelling"
    positions = [published.index(name) for name in classes]
    assert positions == sorted(positions), "actrec's label order is the list's order"
    assert "passing American football (in game)" in classes
    assert "massaging person's head" in classes


def test_kinetics_order_is_actrec_order_for_all_400(tmp_path):
    published = published_class_names("kinetics400")
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    writer.writerow(KINETICS_HEADER.split(","))
    for index, name in enumerate(reversed(published)):
        writer.writerow([name, f"clip{index:04d}xyz", 0, 10, "train"])

    classes = kinetics_classes_from_csv(tmp_path, buffer.getvalue())

    assert classes == published


def test_kinetics_list_keeps_csv_spelling_not_tsm_folder_spelling():
    names = published_class_names("kinetics400")

    assert not any("_" in name for name in names), "TSM's folder names use underscores"
    assert sum("(" in name for name in names) == 9
    assert "skiing (not slalom or crosscountry)" in names


# ----------------------------------------------------------------------------- class files


def test_class_file_skips_comments_and_blank_lines_and_strips(tmp_path):
    path = write_text(
        tmp_path / "classes.txt", "\ufeff# my classes\r\n  walking \r\n\r\nrunning\r\n#x\r\n"
    )

    assert read_class_file(path) == ("walking", "running")


def test_class_file_numbered_from_zero(tmp_path):
    path = write_text(tmp_path / "labels.txt", "0 walking\n1\trunning fast\n2 jumping\n")

    assert read_class_file(path) == ("walking", "running fast", "jumping")


def test_class_file_with_some_numbered_names_keeps_them(tmp_path):
    path = write_text(tmp_path / "labels.txt", "3 point shot\ndunk\n")

    assert read_class_file(path) == ("3 point shot", "dunk")


def test_class_file_numbered_with_a_gap_is_an_error(tmp_path):
    path = write_text(tmp_path / "labels.txt", "1 walking\n2 running\n4 jumping\n")

    with pytest.raises(ConfigError) as raised:
        read_class_file(path)

    message = str(raised.value)
    assert f"{path}:3" in message and "expected 3" in message and "drop the numbers" in message


def test_class_file_numbered_from_five_is_an_error(tmp_path):
    path = write_text(tmp_path / "labels.txt", "5 walking\n6 running\n")

    with pytest.raises(ConfigError, match="must start at 0 or 1, not 5"):
        read_class_file(path)


def test_missing_class_file(tmp_path):
    path = tmp_path / "nowhere.txt"

    with pytest.raises(ConfigError) as raised:
        read_class_file(path)

    message = str(raised.value)
    assert str(path) in message and "does not exist" in message
    assert "one class name per line" in message and "kinetics400" in message


def test_class_file_that_is_a_folder(tmp_path):
    with pytest.raises(ConfigError, match="is a folder"):
        read_class_file(tmp_path)


def test_empty_class_file(tmp_path):
    path = write_text(tmp_path / "empty.txt", "# only a comment\n\n")

    with pytest.raises(ConfigError) as raised:
        read_class_file(path)

    assert str(path) in str(raised.value) and "names no class" in str(raised.value)


def test_class_file_that_is_not_text(tmp_path):
    path = tmp_path / "weights.bin"
    path.write_bytes(b"\x80\x81\xff\xfe")

    with pytest.raises(ConfigError, match="cannot be read as UTF-8"):
        read_class_file(path)


def test_duplicate_class_names(tmp_path):
    path = write_text(tmp_path / "dup.txt", "walking\nrunning\n\nwalking\n")

    with pytest.raises(ConfigError) as raised:
        read_class_file(path)

    message = str(raised.value)
    assert f"{path}:4" in message and "'walking' is named twice" in message
    assert "first on line 1" in message


# ----------------------------------------------------------------------------- resolving


def test_unknown_built_in_name():
    with pytest.raises(ConfigError) as raised:
        published_class_names("kinetics700")

    message = str(raised.value)
    assert "'kinetics700'" in message
    assert all(name in message for name in CLASS_LISTS)


def test_resolve_built_in_and_file(tmp_path):
    path = write_text(tmp_path / "two.txt", "a\nb\n")

    assert resolve_class_names("ucf101", 101) == published_class_names("ucf101")
    assert resolve_class_names(str(path)) == ("a", "b")
    assert resolve_class_names(str(path), expected_count=2) == ("a", "b")


def test_resolve_prefers_the_built_in_list_over_a_file_of_that_name(tmp_path, monkeypatch):
    write_text(tmp_path / "jester", "only\n")
    monkeypatch.chdir(tmp_path)

    assert resolve_class_names("jester") == published_class_names("jester")
    assert resolve_class_names("./jester") == ("only",)


def test_resolve_neither_name_nor_file():
    with pytest.raises(ConfigError) as raised:
        resolve_class_names("kinetics-400")

    message = str(raised.value)
    assert "neither a built-in class list" in message and "kinetics400" in message


def test_wrong_count_for_a_built_in_list():
    with pytest.raises(ConfigError) as raised:
        resolve_class_names("kinetics400", expected_count=101)

    message = str(raised.value)
    assert "the class list kinetics400 has 400 names, the classifier has 101 outputs" in message
    assert "give --classes NAME|FILE with 101 names" in message
    assert "built-in lists with 101 names: ucf101" in message


def test_wrong_count_for_a_file(tmp_path):
    path = write_text(tmp_path / "three.txt", "a\nb\nc\n")

    with pytest.raises(ConfigError) as raised:
        resolve_class_names(str(path), expected_count=27)

    message = str(raised.value)
    assert f"the class list {path} has 3 names, the classifier has 27 outputs" in message
    assert "jester, jester-mmaction2" in message


def test_wrong_count_no_built_in_list_fits():
    with pytest.raises(ConfigError, match="no built-in list has 10: write a class file"):
        resolve_class_names("hmdb51", expected_count=10)
