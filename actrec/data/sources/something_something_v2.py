"""Something-Something V2: 174 classes of object motion, official train / validation / test.

Layout (as 20BN ships it): the videos ``<id>.webm`` in one folder (the root, or
``root/20bn-something-something-v2``), and the annotation files (in the root, in
``root/labels``, or in the folder given with --annotations):

- ``something-something-v2-labels.json``: {class name: "index"} (the index as a string);
- ``something-something-v2-train.json``, ``-validation.json``: a list of {"id", "label",
  "template", "placeholders"}; a video's class is its template with the "[something]"
  brackets removed ("Putting [something] on [something]" -> "Putting something on
  something"), looked up in the labels file;
- ``something-something-v2-test.json``: a list of {"id"}: no labels, so the test split is
  unlabelled (label -1: `actrec eval` writes its scores and predictions, not accuracy).

Classes are the labels file's names in the order of their indices: the order and spelling
of `actrec pretrained classes something-something-v2`, so a converted SSv2 model evaluates
on the prepared set with its classifier kept. An entry whose template is not in the labels
file is left out with a warning; a listed id whose video is absent is reported by prepare.
"""

from __future__ import annotations

import json
from pathlib import Path

from actrec.data.sources.base import UNLABELLED, DatasetListing, SourceOptions, VideoEntry
from actrec.data.sources.official_lists import annotation_folder, listing_from_lists
from actrec.errors import DatasetError

DATASET = "something-something-v2"
PREFIX = "something-something-v2"
LABELS_FILE = f"{PREFIX}-labels.json"
SPLIT_FILES = {"train": f"{PREFIX}-train.json", "val": f"{PREFIX}-validation.json"}
TEST_FILE = f"{PREFIX}-test.json"
VIDEO_FOLDER = "20bn-something-something-v2"
VIDEO_EXTENSION = ".webm"
LABELS_WHAT = (
    'a JSON object {"class name": "index", ...} (174 classes) shipped with the train / '
    "validation / test JSON files"
)


def list_videos(root: Path, options: SourceOptions) -> DatasetListing:
    """List the train, validation and (unlabelled) test videos of Something-Something V2."""
    folder = annotation_folder(root, options.annotations, LABELS_FILE, LABELS_WHAT)
    labels_path = folder / LABELS_FILE
    video_folder = root / VIDEO_FOLDER if (root / VIDEO_FOLDER).is_dir() else root
    list_files = {
        split: folder / name for split, name in (*SPLIT_FILES.items(), ("test", TEST_FILE))
    }
    return listing_from_lists(
        DATASET,
        classes_from_labels(labels_path),
        labels_path,
        list_files,
        lambda path, split, labels: entries_from_list(path, video_folder, split, labels),
        "template",
    )


def read_json(path: Path) -> object:
    """The parsed JSON of `path`; DatasetError naming the file when it does not parse."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DatasetError(
            f"{path} cannot be read as JSON ({error}); use the file as the dataset ships it"
        ) from error


def classes_from_labels(path: Path) -> tuple[str, ...]:
    """The class names of the labels file, ordered by their index (0, 1, 2, ...)."""
    labels = read_json(path)
    form = '{"class name": "index", ...} with indices 0 to N-1'
    try:
        index_by_name = {str(name): int(index) for name, index in labels.items()}
    except (AttributeError, TypeError, ValueError) as error:
        raise DatasetError(f"{path} is not {form}") from error
    if sorted(index_by_name.values()) != list(range(len(index_by_name))):
        raise DatasetError(f"{path} is not {form}: the indices do not run 0 to N-1")
    return tuple(sorted(index_by_name, key=index_by_name.__getitem__))


def class_of_template(template: str) -> str:
    """The class name of a template: its "[something]" brackets removed."""
    return template.replace("[", "").replace("]", "")


def entries_from_list(
    path: Path, video_folder: Path, split: str, label_by_name: dict[str, int] | None
) -> tuple[list[VideoEntry], list[tuple[str, str]]]:
    """The entries of one split file, and the (id, template) of those whose template is not
    a class (label_by_name None: the unlabelled test list, ids only)."""
    items = read_json(path)
    if not isinstance(items, list) or not all(
        isinstance(item, dict) and "id" in item for item in items
    ):
        raise DatasetError(f'{path} is not a JSON list of {{"id": ..., ...}} entries')
    entries: list[VideoEntry] = []
    unknown: list[tuple[str, str]] = []
    for item in items:
        video_id = str(item["id"])
        label = UNLABELLED
        if label_by_name is not None:
            template = str(item.get("template", ""))
            label = label_by_name.get(class_of_template(template), UNLABELLED)
            if label == UNLABELLED:
                unknown.append((video_id, template))
                continue
        path_of_video = video_folder / f"{video_id}{VIDEO_EXTENSION}"
        entries.append(VideoEntry(video_id, path_of_video, label, split))
    return entries, unknown
