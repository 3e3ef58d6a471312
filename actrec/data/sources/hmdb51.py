"""HMDB51: 51 classes, three official 70/30 train/test splits, no validation split.

Videos: ``root/<class>/<video>.avi``. Annotations (``test_train_splits.rar``, folder
``testTrainMulti_7030_splits``): per class and split a file
``<class>_test_split{1,2,3}.txt`` whose lines are "video.avi N" with N = 1 train,
2 test, 0 unused (unused videos are not listed). Trailing spaces are common.

Classes are the sorted class names taken from the split-file names, so any number of
classes works (51 in the real set).
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from actrec.data.sources.base import DatasetListing, SourceOptions, VideoEntry
from actrec.data.sources.ucf101 import annotation_lines, split_id_from
from actrec.errors import AnnotationError, DatasetError

DATASET = "hmdb51"
SPLIT_IDS = ("1", "2", "3")
SPLITS_URL = "https://serre-lab.clps.brown.edu/wp-content/uploads/2013/10/test_train_splits.rar"
SPLIT_FILE_PATTERN = re.compile(r"^(?P<class_name>.+)_test_split(?P<split_id>\d+)\.txt$")
SPLIT_BY_CODE = {"1": "train", "2": "test"}
UNUSED_CODE = "0"


def list_videos(root: Path, options: SourceOptions) -> DatasetListing:
    """List the train and test videos of one official HMDB51 split.

    Split files come from ``options.annotations`` when given, else from the first of
    `annotation_folder_candidates` that holds any ``*_test_split*.txt``.
    """
    split_id = split_id_from(options.split, SPLIT_IDS, DATASET)
    annotation_folder = annotation_folder_for(root, options.annotations)
    split_files = split_files_by_class(annotation_folder, split_id)
    classes = tuple(sorted(split_files))
    entries: list[VideoEntry] = []
    for label, class_name in enumerate(classes):
        entries.extend(entries_from_split_file(split_files[class_name], root, class_name, label))
    entries.sort(key=lambda entry: (entry.split, entry.video_id))
    return DatasetListing(
        dataset=DATASET,
        split_name=split_id,
        classes=classes,
        entries=tuple(entries),
        annotation_files=tuple(split_files[class_name] for class_name in classes),
    )


def annotation_folder_candidates(root: Path) -> list[Path]:
    """Where the split files are looked for when --annotations is not given."""
    return [root / "testTrainMulti_7030_splits", root / "splits", root]


def holds_split_files(folder: Path) -> bool:
    """Whether `folder` has at least one ``<class>_test_split<N>.txt`` file."""
    return folder.is_dir() and any(
        SPLIT_FILE_PATTERN.match(path.name) for path in folder.glob("*_test_split*.txt")
    )


def annotation_folder_for(root: Path, annotations: Path | None) -> Path:
    """The folder holding the ``<class>_test_split<N>.txt`` files."""
    if annotations is not None:
        annotations = Path(annotations)
        folder = annotations.parent if annotations.is_file() else annotations
        if not holds_split_files(folder):
            raise DatasetError(
                f"no HMDB51 split files (<class>_test_split1.txt, ...) in {folder} (given "
                f"with --annotations); pass the testTrainMulti_7030_splits folder of {SPLITS_URL}"
            )
        return folder
    candidates = annotation_folder_candidates(root)
    for folder in candidates:
        if holds_split_files(folder):
            return folder
    looked = ", ".join(str(folder) for folder in candidates)
    raise DatasetError(
        f"HMDB51 split files (<class>_test_split1.txt, ...) not found in {looked}. Download "
        f"them from {SPLITS_URL}, unpack them into {root}, or pass their folder with "
        "--annotations"
    )


def split_files_by_class(annotation_folder: Path, split_id: str) -> dict[str, Path]:
    """{class name: its split file for `split_id`}. Every class that has a split file for
    some split must have one for `split_id`; DatasetError otherwise."""
    files_by_split: dict[str, dict[str, Path]] = {}
    for path in annotation_folder.glob("*_test_split*.txt"):
        match = SPLIT_FILE_PATTERN.match(path.name)
        if match and path.is_file():
            files = files_by_split.setdefault(match["split_id"], {})
            files[match["class_name"]] = path
    all_classes = {name for files in files_by_split.values() for name in files}
    split_files = files_by_split.get(split_id, {})
    missing = sorted(all_classes - set(split_files))
    if missing:
        shown = ", ".join(f"{name}_test_split{split_id}.txt" for name in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise DatasetError(
            f"split {split_id} files missing from {annotation_folder}: {shown}{more}; "
            f"use the complete official split files from {SPLITS_URL}"
        )
    return split_files


def entries_from_split_file(
    path: Path, root: Path, class_name: str, label: int
) -> list[VideoEntry]:
    """The train and test videos of one class split file (unused ones left out)."""
    expected = "'<video>.avi N' with N = 0 (unused), 1 (train) or 2 (test)"
    entries: list[VideoEntry] = []
    seen_line_by_name: dict[str, int] = {}
    for line_number, line in annotation_lines(path):
        fields = line.rsplit(maxsplit=1)
        if len(fields) != 2 or fields[1] not in (*SPLIT_BY_CODE, UNUSED_CODE):
            raise AnnotationError(path, line_number, line, expected)
        file_name = fields[0]
        if "/" in file_name or "\\" in file_name:
            raise AnnotationError(path, line_number, line, expected + " (a file name, no folder)")
        if file_name in seen_line_by_name:
            raise AnnotationError(
                path,
                line_number,
                line,
                f"each video listed once (already on line {seen_line_by_name[file_name]})",
            )
        seen_line_by_name[file_name] = line_number
        if fields[1] == UNUSED_CODE:
            continue
        entries.append(
            VideoEntry(
                video_id=f"{class_name}/{PurePosixPath(file_name).stem}",
                path=root / class_name / file_name,
                label=label,
                split=SPLIT_BY_CODE[fields[1]],
            )
        )
    return entries
