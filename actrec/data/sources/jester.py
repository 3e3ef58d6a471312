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
from actrec.data.sources.official_lists import annotation_folder, listing_from_lists
from actrec.errors import AnnotationError, DatasetError

DATASET = "jester"
LABELS_FILE = "jester-v1-labels.csv"
SPLIT_FILES = {"train": "jester-v1-train.csv", "val": "jester-v1-validation.csv"}
TEST_FILE = "jester-v1-test.csv"
FRAME_FOLDER = "20bn-jester-v1"
LABELS_WHAT = (
    "one gesture name per line (27 lines), shipped with jester-v1-train.csv / -validation.csv / "
    "-test.csv"
)


def list_videos(root: Path, options: SourceOptions) -> DatasetListing:
    """List the train, validation and (unlabelled) test videos of Jester."""
    folder = annotation_folder(root, options.annotations, LABELS_FILE, LABELS_WHAT)
    labels_path = folder / LABELS_FILE
    classes = tuple(line for _, line in csv_lines(labels_path))
    if not classes:
        raise DatasetError(f"{labels_path} is empty; it should hold one class name per line")
    frame_root = root / FRAME_FOLDER if (root / FRAME_FOLDER).is_dir() else root
    list_files = {
        split: folder / name for split, name in (*SPLIT_FILES.items(), ("test", TEST_FILE))
    }
    return listing_from_lists(
        DATASET,
        classes,
        labels_path,
        list_files,
        lambda path, split, labels: entries_from_csv(path, frame_root, split, labels),
        "label",
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
