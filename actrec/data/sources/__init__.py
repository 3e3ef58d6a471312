"""Dataset sources: one module per dataset, each exposing
`list_videos(root: Path, options: SourceOptions) -> DatasetListing`.

`SOURCES` is the one list of datasets: `actrec prepare DATASET` offers its names, and adding
a dataset is a module here and its entry (docs/extending.md)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from actrec.data.sources.base import DatasetListing, SourceOptions
from actrec.errors import ConfigError, DatasetError


@dataclass(frozen=True)
class Source:
    """One dataset `actrec prepare` knows: the module actrec.data.sources.NAME lists it
    (NAME with "_" for "-": something_something_v2).

    numbered_splits: the official lists come in numbered splits (1, 2, 3), chosen with
    `--split` and named in the default output folder (datasets/prepared/NAME-splitN).
    """

    name: str
    description: str
    numbered_splits: bool = False

    @property
    def module_name(self) -> str:
        """The module under actrec.data.sources that lists it ("-" in a name is "_")."""
        return self.name.replace("-", "_")


SOURCES = {
    source.name: source
    for source in (
        Source("ucf101", "UCF101 with its official train / test lists", numbered_splits=True),
        Source("hmdb51", "HMDB51 with its official split files", numbered_splits=True),
        Source("kinetics", "Kinetics-400/600/700 from its CSV annotations"),
        Source("something-something-v2", "Something-Something V2 from its JSON lists"),
        Source("jester", "Jester V1 (frame folders) from its CSV lists"),
        Source("folder", "your own videos, one folder per class"),
        Source("synthetic", "the built-in synthetic motion set (`actrec synthetic`)"),
    )
}
SOURCE_NAMES = tuple(SOURCES)

__all__ = ["SOURCES", "SOURCE_NAMES", "Source", "check_dataset_root", "list_videos"]


def list_videos(
    dataset: str, root: Path | str, options: SourceOptions | None = None
) -> DatasetListing:
    """List the videos of `dataset` under `root` from its official annotations."""
    root = Path(root)
    check_dataset_root(dataset, root)
    module = importlib.import_module(f"actrec.data.sources.{SOURCES[dataset].module_name}")
    return module.list_videos(root, options or SourceOptions())


def check_dataset_root(dataset: str, root: Path | str) -> None:
    """ConfigError / DatasetError naming the fix when `dataset` is not a source or `root` is
    not a folder (no file read: `actrec prepare` asks before it imports TensorFlow)."""
    if dataset not in SOURCE_NAMES:
        raise ConfigError(f"unknown dataset {dataset!r}; choose one of: {', '.join(SOURCE_NAMES)}")
    root = Path(root)
    if not root.exists():
        raise DatasetError(
            f"dataset root {root} does not exist; pass the folder that holds the "
            f"{dataset} videos with --root"
        )
    if not root.is_dir():
        raise DatasetError(f"dataset root {root} is a file; pass the folder that holds the videos")
