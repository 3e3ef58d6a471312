"""UCF101: 101 classes, three official train/test splits, no validation split.

Official annotations (``UCF101TrainTestSplits-RecognitionTask.zip``, folder
``ucfTrainTestlist``), all with CRLF line ends:

- ``classInd.txt``: "1 ApplyEyeMakeup", 1-based class indices;
- ``trainlistNN.txt``: "ApplyEyeMakeup/v_ApplyEyeMakeup_g08_c01.avi 1";
- ``testlistNN.txt``: "ApplyEyeMakeup/v_ApplyEyeMakeup_g01_c01.avi" (no label).

Class names match case-insensitively: the lists name the folder "HandStandPushups" where
classInd.txt and the archive spell it "HandstandPushups". Files on disk are resolved
case-insensitively too (folder and file name), from one index of the video tree.

The parsing functions here are shared with the synthetic source, which writes its data
in the same layout (see `listing_from_split_files`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from actrec.data.sources.base import DatasetListing, SourceOptions, VideoEntry
from actrec.errors import AnnotationError, ConfigError, DatasetError

DATASET = "ucf101"
SPLIT_IDS = ("1", "2", "3")
DEFAULT_SPLIT = "1"
CLASS_INDEX_FILE = "classInd.txt"
SPLITS_URL = "https://www.crcv.ucf.edu/data/UCF101/UCF101TrainTestSplits-RecognitionTask.zip"
VIDEOS_URL = "https://www.crcv.ucf.edu/data/UCF101/UCF101.rar"
VIDEO_FOLDER = "UCF-101"


def list_videos(root: Path, options: SourceOptions) -> DatasetListing:
    """List the train and test videos of one official UCF101 split.

    Annotations come from ``options.annotations`` when given, else from the first of
    `annotation_folder_candidates` that holds classInd.txt. Videos are looked up under
    ``root/UCF-101`` when that folder exists, else under ``root``.
    """
    split_id = split_id_from(options.split, SPLIT_IDS, DATASET)
    annotation_folder = annotation_folder_for(root, options.annotations)
    return listing_from_split_files(
        dataset=DATASET,
        annotation_folder=annotation_folder,
        video_root=video_root_for(root),
        split_id=split_id,
        download_hint=(
            f"download the official splits from {SPLITS_URL} and pass their "
            "ucfTrainTestlist folder with --annotations"
        ),
    )


# ----------------------------------------------------------------------------- options


def split_id_from(requested: str | None, valid_ids: tuple[str, ...], dataset: str) -> str:
    """The split id to use: the requested one (validated) or the first valid one."""
    if requested is None:
        return valid_ids[0]
    split_id = str(requested).strip()
    if split_id.isdigit() and split_id.lstrip("0"):
        split_id = split_id.lstrip("0")  # "01" names split 1, as in "trainlist01.txt"
    if split_id not in valid_ids:
        raise ConfigError(
            f"unknown {dataset} split {requested!r}; choose one of: {', '.join(valid_ids)}"
        )
    return split_id


def annotation_folder_candidates(root: Path) -> list[Path]:
    """Where the official split files are looked for when --annotations is not given."""
    return [
        root / "ucfTrainTestlist",
        root / "UCF101TrainTestSplits-RecognitionTask" / "ucfTrainTestlist",
        root,
        root.parent / "ucfTrainTestlist",
    ]


def annotation_folder_for(root: Path, annotations: Path | None) -> Path:
    """The folder holding classInd.txt and the split lists; DatasetError when none does."""
    if annotations is not None:
        annotations = Path(annotations)
        folder = annotations.parent if annotations.is_file() else annotations
        if not (folder / CLASS_INDEX_FILE).is_file():
            raise DatasetError(
                f"{CLASS_INDEX_FILE} not found in {folder} (given with --annotations); "
                f"pass the ucfTrainTestlist folder of {SPLITS_URL}"
            )
        return folder
    candidates = annotation_folder_candidates(root)
    for folder in candidates:
        if (folder / CLASS_INDEX_FILE).is_file():
            return folder
    looked = ", ".join(str(folder) for folder in candidates)
    raise DatasetError(
        f"UCF101 annotations not found: no {CLASS_INDEX_FILE} in {looked}. Download the "
        f"official splits from {SPLITS_URL}, unzip them into {root}, or pass their "
        "ucfTrainTestlist folder with --annotations"
    )


def video_root_for(root: Path) -> Path:
    """``root/UCF-101`` (the folder the official archive unpacks to) if present, else root."""
    nested = root / VIDEO_FOLDER
    return nested if nested.is_dir() else root


# ----------------------------------------------------------------------------- parsing


@dataclass(frozen=True)
class ClassIndex:
    """The classes of classInd.txt: names in label order and a case-insensitive lookup."""

    names: tuple[str, ...]
    label_by_lower_name: dict[str, int]

    def label_of(self, class_name: str) -> int | None:
        """0-based label of `class_name` (any letter case), or None if unknown."""
        return self.label_by_lower_name.get(class_name.lower())


@dataclass(frozen=True)
class ListedVideo:
    """One line of a split list: the relative path as written and the class label."""

    relative_path: str
    label: int
    line_number: int
    line: str


def annotation_lines(path: Path) -> list[tuple[int, str]]:
    """(1-based line number, stripped text) of every non-blank line; CRLF or LF."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise DatasetError(
            f"{path} is not a text file ({error}); point --annotations at the official files"
        ) from error
    return [
        (line_number, line.strip())
        for line_number, line in enumerate(text.splitlines(), start=1)
        if line.strip()
    ]


def class_index_from(path: Path) -> ClassIndex:
    """Parse classInd.txt: "1 ApplyEyeMakeup" lines, indices 1, 2, 3, ... in order."""
    expected = "'<index> <ClassName>' with 1-based indices 1, 2, 3, ... in order"
    names: list[str] = []
    label_by_lower_name: dict[str, int] = {}
    for line_number, line in annotation_lines(path):
        fields = line.split()
        if len(fields) != 2 or not fields[0].isdigit() or int(fields[0]) != len(names) + 1:
            raise AnnotationError(path, line_number, line, expected)
        name = fields[1]
        if name.lower() in label_by_lower_name:
            raise AnnotationError(path, line_number, line, "each class named once")
        label_by_lower_name[name.lower()] = len(names)
        names.append(name)
    if not names:
        raise DatasetError(f"{path} lists no classes; expected lines like '1 ApplyEyeMakeup'")
    return ClassIndex(names=tuple(names), label_by_lower_name=label_by_lower_name)


def listed_videos_from(path: Path, class_index: ClassIndex) -> list[ListedVideo]:
    """Parse a trainlist/testlist file: "Class/video.avi [LABEL]" lines.

    The label is the class folder's entry in classInd.txt. A label written on the line
    (trainlists carry one, testlists do not) must agree with it.
    """
    expected = (
        "'<Class>/<video>.avi' optionally followed by the 1-based class index of "
        f"<Class> in {CLASS_INDEX_FILE}"
    )
    listed: list[ListedVideo] = []
    for line_number, line in annotation_lines(path):
        fields = line.split()
        relative_path = fields[0].replace("\\", "/").removeprefix("./")
        parts = relative_path.split("/")
        if len(fields) > 2 or len(parts) != 2 or not all(parts):
            raise AnnotationError(path, line_number, line, expected)
        label = class_index.label_of(parts[0])
        if label is None:
            raise AnnotationError(
                path, line_number, line, f"a class folder named in {CLASS_INDEX_FILE}"
            )
        if len(fields) == 2:
            written_label = fields[1]
            if not written_label.isdigit():
                raise AnnotationError(path, line_number, line, expected)
            if int(written_label) != label + 1:
                raise AnnotationError(
                    path,
                    line_number,
                    line,
                    f"label {label + 1} ({class_index.names[label]} in {CLASS_INDEX_FILE}), "
                    f"not {written_label}",
                )
        listed.append(ListedVideo(relative_path, label, line_number, line))
    return listed


# ----------------------------------------------------------------------------- files


@dataclass(frozen=True)
class VideoTreeIndex:
    """The files of a two-level <class>/<file> tree, keyed by lower-case names."""

    folder_by_lower_name: dict[str, Path]
    file_by_lower_path: dict[str, Path]

    def path_for(self, video_root: Path, relative_path: str) -> Path:
        """The file on disk matching `relative_path` in any letter case, or where it
        should be: in the existing class folder (any case) under its listed file name."""
        found = self.file_by_lower_path.get(relative_path.lower())
        if found is not None:
            return found
        folder_name, file_name = relative_path.split("/")
        folder = self.folder_by_lower_name.get(folder_name.lower(), video_root / folder_name)
        return folder / file_name


def video_tree_index(video_root: Path) -> VideoTreeIndex:
    """Scan `video_root` once: its sub-folders and the files directly inside them."""
    folder_by_lower_name: dict[str, Path] = {}
    file_by_lower_path: dict[str, Path] = {}
    if not video_root.is_dir():
        return VideoTreeIndex(folder_by_lower_name, file_by_lower_path)
    with os.scandir(video_root) as folders:
        class_folders = sorted(
            (entry for entry in folders if entry.is_dir()), key=lambda entry: entry.name
        )
    for folder in class_folders:
        folder_by_lower_name.setdefault(folder.name.lower(), Path(folder.path))
        with os.scandir(folder.path) as files:
            for file in sorted(files, key=lambda entry: entry.name):
                if file.is_file():
                    key = f"{folder.name}/{file.name}".lower()
                    file_by_lower_path.setdefault(key, Path(file.path))
    return VideoTreeIndex(folder_by_lower_name, file_by_lower_path)


# ----------------------------------------------------------------------------- listing


def split_file_paths(annotation_folder: Path, split_id: str, download_hint: str) -> dict[str, Path]:
    """{"train": trainlistNN.txt, "test": testlistNN.txt}; DatasetError if one is missing."""
    paths = {
        "train": annotation_folder / f"trainlist{int(split_id):02d}.txt",
        "test": annotation_folder / f"testlist{int(split_id):02d}.txt",
    }
    for path in paths.values():
        if not path.is_file():
            raise DatasetError(
                f"split {split_id} list {path.name} not found in {annotation_folder}; "
                f"{download_hint}"
            )
    return paths


def listing_from_split_files(
    dataset: str,
    annotation_folder: Path,
    video_root: Path,
    split_id: str,
    download_hint: str,
) -> DatasetListing:
    """Read classInd.txt and the split's train/test lists from `annotation_folder` and
    list their videos under `video_root` (UCF101 layout). Missing videos keep the path
    where they were expected. A video listed twice is an AnnotationError."""
    class_index_path = annotation_folder / CLASS_INDEX_FILE
    class_index = class_index_from(class_index_path)
    split_paths = split_file_paths(annotation_folder, split_id, download_hint)
    tree_index = video_tree_index(video_root)
    entries: list[VideoEntry] = []
    first_listing: dict[str, str] = {}
    for split, path in split_paths.items():
        for listed in listed_videos_from(path, class_index):
            video_id = str(PurePosixPath(listed.relative_path).with_suffix(""))
            if video_id in first_listing:
                raise AnnotationError(
                    path,
                    listed.line_number,
                    listed.line,
                    f"each video listed once (already listed in {first_listing[video_id]})",
                )
            first_listing[video_id] = path.name
            entries.append(
                VideoEntry(
                    video_id=video_id,
                    path=tree_index.path_for(video_root, listed.relative_path),
                    label=listed.label,
                    split=split,
                )
            )
    entries.sort(key=lambda entry: (entry.split, entry.video_id))
    return DatasetListing(
        dataset=dataset,
        split_name=split_id,
        classes=class_index.names,
        entries=tuple(entries),
        annotation_files=(class_index_path, split_paths["train"], split_paths["test"]),
    )
