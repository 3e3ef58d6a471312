"""What the 20BN datasets (Something-Something V2, Jester) share: a labels file and one list
file per split, found in the root, root/labels, root/annotations or --annotations; the test
list unlabelled; entries whose class is not in the labels file left out with a warning.

    annotation_folder(root, annotations, labels_file, what) -> the folder holding it
    listing_from_lists(...) -> DatasetListing of every split's list
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from actrec.data.sources.base import DatasetListing, VideoEntry
from actrec.errors import DatasetError

SplitEntries = Callable[[Path, str, Mapping[str, int] | None], tuple[list, list]]
"""(list file, split, label by class name or None for the unlabelled test list) ->
(its VideoEntry list, its (id, class) pairs whose class is not in the labels file)."""


def annotation_folder(root: Path, annotations: Path | None, labels_file: str, what: str) -> Path:
    """The folder holding `labels_file`; DatasetError naming it (and `what` it holds) when
    it is in none of the places looked at."""
    if annotations is not None:
        annotations = Path(annotations)
        candidates = [annotations.parent if annotations.is_file() else annotations]
    else:
        candidates = [root, root / "labels", root / "annotations"]
    for folder in candidates:
        if (folder / labels_file).is_file():
            return folder
    looked = ", ".join(str(folder) for folder in candidates)
    raise DatasetError(
        f"{labels_file} not found in {looked}: it is the dataset's class list, {what}; put "
        "them in the root or pass their folder with --annotations"
    )


def listing_from_lists(
    dataset: str,
    classes: tuple[str, ...],
    labels_path: Path,
    list_files: Mapping[str, Path],
    split_entries: SplitEntries,
    class_word: str,
) -> DatasetListing:
    """The listing of every split's list file (`list_files`: split -> path; "test" is
    unlabelled); a missing list leaves its split empty, with a warning; `class_word` names
    what an entry gives ("label", "template") in the warning of those left out."""
    label_by_name = {name: label for label, name in enumerate(classes)}
    entries: list[VideoEntry] = []
    warnings: list[str] = []
    read_files = [labels_path]
    for split, path in list_files.items():
        if not path.is_file():
            warnings.append(f"{path} not found, so the {split} split is empty")
            continue
        read_files.append(path)
        found, unknown = split_entries(path, split, None if split == "test" else label_by_name)
        entries.extend(found)
        if unknown:
            shown = "; ".join(f"id {video_id}: {name!r}" for video_id, name in unknown[:3])
            more = f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
            warnings.append(
                f"{len(unknown)} video(s) of {path.name} left out: their {class_word} is not "
                f"in {labels_path.name} ({shown}{more}); use the labels file of the same release"
            )
    entries.sort(key=lambda entry: (entry.split, entry.video_id))
    return DatasetListing(
        dataset=dataset,
        split_name="official",
        classes=classes,
        entries=tuple(entries),
        annotation_files=tuple(read_files),
        warnings=tuple(warnings),
    )
