"""Jester (20BN-Jester V1): 27 hand gestures, official train / validation / test lists.

Layout (as 20BN ships it): one folder of JPEG frames per video (``<id>/00001.jpg``, ...,
at 12 frames/s) in the root or in ``root/20bn-jester-v1``; the annotation files in the
root, in ``root/labels`` or in the folder given with --annotations:

- ``jester-v1-labels.csv``: one class name per line;
- ``jester-v1-train.csv``, ``jester-v1-validation.csv``: lines ``id;label``;
- ``jester-v1-test.csv``: lines ``id`` (no labels: the test split is unlabelled).

Classes are the names of jester-v1-labels.csv in its line order. The frames are read as
frames (actrec.data.format.frame_folder), never re-encoded to a video first. A label not in
the labels file is left out with a warning; a listed id without a frame folder, and a frame
folder whose numbering has a gap, are reported by prepare.
"""

from __future__ import annotations

from pathlib import Path

from actrec.data.sources.base import UNLABELLED, DatasetListing, SourceOptions, VideoEntry
from actrec.errors import AnnotationError, DatasetError

DATASET = "jester"
LABELS_FILE = "jester-v1-labels.csv"
SPLIT_FILES = {"train": "jester-v1-train.csv", "val": "jester-v1-validation.csv"}
TEST_FILE = "jester-v1-test.csv"
FRAME_FOLDER = "20bn-jester-v1"
SPLIT_NAME = "official"


def list_videos(root: Path, options: SourceOptions) -> DatasetListing:
    """List the train, validation and (unlabelled) test videos of Jester."""
    annotation_folder = annotation_folder_for(root, options.annotations)
    labels_path = annotation_folder / LABELS_FILE
    classes = tuple(line for _, line in csv_lines(labels_path))
    if not classes:
        raise DatasetError(f"{labels_path} is empty; it should hold one class name per line")
    label_by_name = {name: label for label, name in enumerate(classes)}
    frame_root = root / FRAME_FOLDER if (root / FRAME_FOLDER).is_dir() else root
    entries: list[VideoEntry] = []
    warnings: list[str] = []
    read_files = [labels_path]
    for split, file_name in (*SPLIT_FILES.items(), ("test", TEST_FILE)):
        path = annotation_folder / file_name
        if not path.is_file():
            warnings.append(f"{path} not found, so the {split} split is empty")
            continue
        read_files.append(path)
        labels = None if split == "test" else label_by_name
        split_entries, unknown = entries_from_csv(path, frame_root, split, labels)
        entries.extend(split_entries)
        if unknown:
            shown = "; ".join(f"id {video_id}: {label!r}" for video_id, label in unknown[:3])
            more = f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
            warnings.append(
                f"{len(unknown)} video(s) of {path.name} left out: their label is not in "
                f"{LABELS_FILE} ({shown}{more}); use the labels file of the same release"
            )
    entries.sort(key=lambda entry: (entry.split, entry.video_id))
    return DatasetListing(
        dataset=DATASET,
        split_name=SPLIT_NAME,
        classes=classes,
        entries=tuple(entries),
        annotation_files=tuple(read_files),
        warnings=tuple(warnings),
    )


def annotation_folder_for(root: Path, annotations: Path | None) -> Path:
    """The folder holding the labels file; DatasetError naming the file when it is absent."""
    if annotations is not None:
        annotations = Path(annotations)
        candidates = [annotations.parent if annotations.is_file() else annotations]
    else:
        candidates = [root, root / "labels", root / "annotations"]
    for folder in candidates:
        if (folder / LABELS_FILE).is_file():
            return folder
    looked = ", ".join(str(folder) for folder in candidates)
    raise DatasetError(
        f"{LABELS_FILE} not found in {looked}: it is the dataset's class list, one gesture "
        "name per line (27 lines), shipped with jester-v1-train.csv / -validation.csv / "
        "-test.csv; put them in the root or pass their folder with --annotations"
    )


def csv_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, stripped line) of the non-blank lines of `path`."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise DatasetError(f"{path} cannot be read ({error}); use the file as shipped") from error
    lines = enumerate(text.splitlines(), start=1)
    return [(number, line.strip()) for number, line in lines if line.strip()]


def entries_from_csv(
    path: Path, frame_root: Path, split: str, label_by_name: dict[str, int] | None
) -> tuple[list[VideoEntry], list[tuple[str, str]]]:
    """The entries of one split file, and the (id, label) of those whose label is not a
    class (label_by_name None: the unlabelled test list, ids only)."""
    expected = "'id'" if label_by_name is None else "'id;label'"
    entries: list[VideoEntry] = []
    unknown: list[tuple[str, str]] = []
    for line_number, line in csv_lines(path):
        fields = [field.strip() for field in line.split(";")]
        if not fields[0] or (label_by_name is not None and len(fields) != 2):
            raise AnnotationError(path, line_number, line, expected)
        video_id, label = fields[0], UNLABELLED
        if label_by_name is not None:
            label = label_by_name.get(fields[1], UNLABELLED)
            if label == UNLABELLED:
                unknown.append((video_id, fields[1]))
                continue
        entries.append(VideoEntry(video_id, frame_root / video_id, label, split))
    return entries, unknown
