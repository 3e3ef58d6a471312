"""Kinetics-400 / 600 / 700: YouTube clips listed in official CSV files.

Annotations: one CSV per split (``train.csv``, ``validate.csv``, ``test.csv`` or names like
``kinetics_400_val.csv``) with a header and the columns
``label,youtube_id,time_start,time_end,split[,is_cc]``; the test CSV may have no
``label`` column (its clips are then UNLABELLED). A CSV's split comes from its file name
(the stem contains "train", "val"/"validate" or "test"); a single CSV whose name names
no split (given with --annotations) takes each row's ``split`` column instead.

Classes are the sorted unique labels of the train CSV (the standard ordering); without a
train CSV, the sorted labels of all labelled rows. A labelled val/test clip whose label
is not a class is an AnnotationError.

Clip files are ``<youtube_id>_<start:06d>_<end:06d>.<ext>`` in class folders (spaces or
underscores), per-split folders, or flat; every video file under the root is indexed
once by stem and clips are looked up there (a file named just ``<youtube_id>.<ext>`` is
accepted too). 6-10 % of clips are missing in any real copy: they are listed with the
path where they were expected, and `prepare` reports them.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from actrec.data.sources.base import (
    UNLABELLED,
    DatasetListing,
    SourceOptions,
    VideoEntry,
    video_files_under,
)
from actrec.errors import AnnotationError, ConfigError, DatasetError

DATASET = "kinetics"
VARIANTS = ("400", "600", "700")
ANNOTATIONS_URL = "https://github.com/cvdfoundation/kinetics-dataset"
REQUIRED_COLUMNS = ("youtube_id", "time_start", "time_end")
SPLIT_BY_WORD = {"train": "train", "val": "val", "test": "test"}
SPLIT_BY_COLUMN_VALUE = {
    "train": "train",
    "training": "train",
    "val": "val",
    "valid": "val",
    "validate": "val",
    "validation": "val",
    "test": "test",
    "testing": "test",
}
SPLIT_FOLDER_NAMES = {
    "train": ("train",),
    "val": ("val", "validate", "validation"),
    "test": ("test",),
}
EXPECTED_EXTENSION = ".mp4"


@dataclass(frozen=True)
class ClipRow:
    """One CSV row: a clip, its label text ("" when unlabelled) and where it was read."""

    clip_id: str
    youtube_id: str
    label_text: str
    split: str
    path: Path
    line_number: int
    line: str


def list_videos(root: Path, options: SourceOptions) -> DatasetListing:
    """List the train / val / test clips of a Kinetics copy under `root`.

    ``options.split`` may name the variant ("400", "600", "700") to check that the CSVs
    hold that many classes; the listing's split_name is the class count.
    """
    requested_variant = variant_from(options.split)
    csv_paths = csv_paths_for(root, options.annotations)
    rows = unique_rows([row for path in csv_paths for row in rows_from_csv(path)])
    classes = classes_from(rows, csv_paths)
    if requested_variant is not None and requested_variant != str(len(classes)):
        raise DatasetError(
            f"the Kinetics annotations {', '.join(str(path) for path in csv_paths)} hold "
            f"{len(classes)} classes, not {requested_variant}; point --annotations at the "
            f"Kinetics-{requested_variant} CSVs"
        )
    label_by_name = {name: label for label, name in enumerate(classes)}
    clip_index = video_index_by_stem(root)
    entries = [
        VideoEntry(
            video_id=row.clip_id,
            path=clip_path(root, clip_index, row),
            label=label_of(row, label_by_name),
            split=row.split,
        )
        for row in rows
    ]
    entries.sort(key=lambda entry: (entry.split, entry.video_id))
    return DatasetListing(
        dataset=DATASET,
        split_name=str(len(classes)),
        classes=classes,
        entries=tuple(entries),
        annotation_files=tuple(csv_paths),
    )


# ----------------------------------------------------------------------------- options


def variant_from(requested: str | None) -> str | None:
    """The Kinetics variant the user asked for ("400", "600", "700"), or None."""
    if requested is None:
        return None
    variant = str(requested).strip().lower().removeprefix("kinetics").strip("-_ ")
    if variant not in VARIANTS:
        raise ConfigError(
            f"unknown kinetics split {requested!r}; choose one of: {', '.join(VARIANTS)} "
            "(the variant; the train / val / test splits all come from the CSVs)"
        )
    return variant


# ----------------------------------------------------------------------------- CSV files


def split_from_file_name(path: Path) -> str | None:
    """The split ("train", "val" or "test") the file's stem names, if it names just one."""
    stem = path.stem.lower()
    found = {split for word, split in SPLIT_BY_WORD.items() if word in stem}
    return found.pop() if len(found) == 1 else None


def split_csvs_in(folder: Path) -> dict[str, list[Path]]:
    """{split: the CSVs of `folder` whose stem names that split}."""
    by_split: dict[str, list[Path]] = {}
    if not folder.is_dir():
        return by_split
    for path in sorted(folder.glob("*.csv")):
        split = split_from_file_name(path)
        if split is not None and path.is_file():
            by_split.setdefault(split, []).append(path)
    return by_split


def annotation_folder_candidates(root: Path) -> list[Path]:
    """Where the CSVs are looked for when --annotations is not given."""
    return [root / "annotations", root]


def csv_paths_for(root: Path, annotations: Path | None) -> list[Path]:
    """The CSV files to read: the one given, or one per split found in a folder."""
    if annotations is not None:
        annotations = Path(annotations)
        if annotations.is_file():
            return [annotations]
        by_split = split_csvs_in(annotations)
        if not by_split:
            raise DatasetError(
                f"no Kinetics CSV (train.csv, validate.csv, test.csv) in {annotations} (given "
                f"with --annotations); download the annotations from {ANNOTATIONS_URL}"
            )
        return single_csv_per_split(by_split)
    candidates = annotation_folder_candidates(root)
    for folder in candidates:
        by_split = split_csvs_in(folder)
        if by_split:
            return single_csv_per_split(by_split)
    looked = ", ".join(str(folder) for folder in candidates)
    raise DatasetError(
        f"Kinetics annotations not found: no CSV named like train.csv / validate.csv / "
        f"test.csv in {looked}. Download them from {ANNOTATIONS_URL} into {root / 'annotations'}"
        ", or pass their folder (or one CSV) with --annotations"
    )


def single_csv_per_split(by_split: dict[str, list[Path]]) -> list[Path]:
    """One CSV per split, train first; DatasetError when a split has several."""
    for split, paths in by_split.items():
        if len(paths) > 1:
            raise DatasetError(
                f"several {split} CSVs: {', '.join(str(path) for path in paths)}; keep one, "
                "or pass the one to use with --annotations"
            )
    return [by_split[split][0] for split in ("train", "val", "test") if split in by_split]


def rows_from_csv(path: Path) -> list[ClipRow]:
    """Parse one Kinetics CSV (header, then one clip per row)."""
    file_split = split_from_file_name(path)
    with open(path, newline="", encoding="utf-8-sig") as file:
        lines = file.read().splitlines()
    reader = csv.reader(lines)
    header = next(reader, None)
    if header is None:
        raise DatasetError(f"{path} is empty; expected a Kinetics CSV with a header line")
    columns = [name.strip().lower() for name in header]
    missing = [name for name in REQUIRED_COLUMNS if name not in columns]
    if missing:
        raise AnnotationError(
            path,
            1,
            lines[0],
            f"the header 'label,youtube_id,time_start,time_end,split' ({', '.join(missing)} "
            "missing)",
        )
    rows: list[ClipRow] = []
    for values in reader:
        line_number = reader.line_num
        line = lines[line_number - 1]
        if not any(value.strip() for value in values):
            continue
        if len(values) != len(columns):
            raise AnnotationError(
                path, line_number, line, f"{len(columns)} columns as in the header"
            )
        record = dict(zip(columns, (value.strip() for value in values), strict=True))
        rows.append(row_from_record(record, file_split, path, line_number, line))
    return rows


def row_from_record(
    record: dict[str, str], file_split: str | None, path: Path, line_number: int, line: str
) -> ClipRow:
    """A ClipRow from one CSV record; AnnotationError when a value is malformed."""
    youtube_id = record["youtube_id"]
    start = seconds_from(record["time_start"])
    end = seconds_from(record["time_end"])
    if not youtube_id or start is None or end is None or end < start:
        raise AnnotationError(
            path,
            line_number,
            line,
            "a YouTube id and whole-second time_start <= time_end",
        )
    split = file_split or SPLIT_BY_COLUMN_VALUE.get(record.get("split", "").lower())
    if split is None:
        raise AnnotationError(path, line_number, line, "a split column of train, val or test")
    label_text = record.get("label", "")
    if split == "train" and not label_text:
        raise AnnotationError(path, line_number, line, "a label for every train clip")
    return ClipRow(
        clip_id=f"{youtube_id}_{start:06d}_{end:06d}",
        youtube_id=youtube_id,
        label_text=label_text,
        split=split,
        path=path,
        line_number=line_number,
        line=line,
    )


def seconds_from(text: str) -> int | None:
    """A non-negative whole number of seconds from "10" or "10.0"; None otherwise."""
    try:
        value = float(text)
    except ValueError:
        return None
    if value < 0 or not value.is_integer():
        return None
    return int(value)


def unique_rows(rows: list[ClipRow]) -> list[ClipRow]:
    """The rows with exact repeats (same clip, label and split) dropped; a clip listed
    twice with a different label or split is an AnnotationError."""
    first_by_clip: dict[str, ClipRow] = {}
    unique: list[ClipRow] = []
    for row in rows:
        first = first_by_clip.get(row.clip_id)
        if first is None:
            first_by_clip[row.clip_id] = row
            unique.append(row)
        elif (first.label_text, first.split) != (row.label_text, row.split):
            raise AnnotationError(
                row.path,
                row.line_number,
                row.line,
                f"each clip listed once (already {first.split} {first.label_text!r} on "
                f"line {first.line_number} of {first.path.name})",
            )
    return unique


def classes_from(rows: list[ClipRow], csv_paths: list[Path]) -> tuple[str, ...]:
    """Sorted unique labels of the train rows (of all labelled rows without a train CSV);
    AnnotationError for a labelled clip whose label is not among them."""
    train_labels = {row.label_text for row in rows if row.split == "train"}
    classes = tuple(sorted(train_labels or {row.label_text for row in rows if row.label_text}))
    if not classes:
        raise DatasetError(
            f"no labelled clips in {', '.join(str(path) for path in csv_paths)}; the class "
            f"list comes from the train CSV: download it from {ANNOTATIONS_URL}"
        )
    known = set(classes)
    for row in rows:
        if row.label_text and row.label_text not in known:
            raise AnnotationError(
                row.path, row.line_number, row.line, "a label that occurs in the train CSV"
            )
    return classes


def label_of(row: ClipRow, label_by_name: dict[str, int]) -> int:
    """The 0-based label of a row, or UNLABELLED for a clip without a label."""
    return label_by_name[row.label_text] if row.label_text else UNLABELLED


# ----------------------------------------------------------------------------- clip files


def video_index_by_stem(root: Path) -> dict[str, Path]:
    """{file stem: path} of every video file under `root`, walked once in sorted order
    (hidden folders skipped, linked folders followed once; the first file wins when two
    share a stem)."""
    index: dict[str, Path] = {}
    for path in video_files_under(root):
        index.setdefault(path.stem, path)
    return index


def clip_path(root: Path, clip_index: dict[str, Path], row: ClipRow) -> Path:
    """The clip's file (by full clip id, else by bare YouTube id), or where it would be."""
    found = clip_index.get(row.clip_id) or clip_index.get(row.youtube_id)
    return found if found is not None else expected_clip_path(root, row)


def expected_clip_path(root: Path, row: ClipRow) -> Path:
    """Where a missing clip is expected: in the split folder and class folder when those
    exist (class folders spelled with spaces or underscores), else directly under root."""
    folder = first_existing_folder(root, SPLIT_FOLDER_NAMES[row.split]) or root
    if row.label_text:
        class_folder_names = (row.label_text, row.label_text.replace(" ", "_"))
        folder = first_existing_folder(folder, class_folder_names) or folder
    return folder / f"{row.clip_id}{EXPECTED_EXTENSION}"


def first_existing_folder(parent: Path, names: tuple[str, ...]) -> Path | None:
    """The first of parent/name that is a folder, or None."""
    for name in names:
        if (parent / name).is_dir():
            return parent / name
    return None
