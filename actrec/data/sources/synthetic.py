"""The built-in synthetic motion set, listed from its UCF101-style split files.

`actrec.data.synthetic.dataset` generates it in UCF101 layout::

    ROOT/<Class>/v_<Class>_gGG_cCC.avi
    ROOT/splits/classInd.txt, trainlist01.txt, testlist01.txt   (CRLF, test list unlabelled)

so this source reuses the UCF101 parser. It has one split, "1", and no validation split.
"""

from __future__ import annotations

from pathlib import Path

from actrec.data.sources import ucf101
from actrec.data.sources.base import DatasetListing, SourceOptions
from actrec.errors import DatasetError

DATASET = "synthetic"
SPLIT_IDS = ("1",)
SPLITS_FOLDER = "splits"


def list_videos(root: Path, options: SourceOptions) -> DatasetListing:
    """List the train and test videos of the synthetic set generated under `root`.

    The split files are read from ``options.annotations`` when given, else from
    ``root/splits``; the videos are looked up under `root`.
    """
    split_id = ucf101.split_id_from(options.split, SPLIT_IDS, DATASET)
    annotation_folder = annotation_folder_for(root, options.annotations)
    return ucf101.listing_from_split_files(
        dataset=DATASET,
        annotation_folder=annotation_folder,
        video_root=root,
        split_id=split_id,
        download_hint=generate_hint(root),
    )


def generate_hint(root: Path) -> str:
    """How to (re)create the synthetic set under `root`."""
    return (
        f"generate the synthetic set with `actrec synthetic {root}` "
        "(`actrec prepare synthetic` also generates it when it is missing)"
    )


def annotation_folder_for(root: Path, annotations: Path | None) -> Path:
    """The folder holding the generated classInd.txt; DatasetError when it is missing."""
    if annotations is not None:
        annotations = Path(annotations)
        folder = annotations.parent if annotations.is_file() else annotations
    else:
        folder = root / SPLITS_FOLDER
    if not (folder / ucf101.CLASS_INDEX_FILE).is_file():
        raise DatasetError(
            f"no synthetic dataset at {root}: {folder / ucf101.CLASS_INDEX_FILE} is missing; "
            f"{generate_hint(root)}"
        )
    return folder
