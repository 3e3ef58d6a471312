"""Dataset sources: one module per dataset, each exposing
`list_videos(root: Path, options: SourceOptions) -> DatasetListing`."""

from __future__ import annotations

import importlib
from pathlib import Path

from actrec.data.sources.base import DatasetListing, SourceOptions, VideoEntry
from actrec.errors import ConfigError, DatasetError

SOURCE_NAMES = ("ucf101", "hmdb51", "kinetics", "folder", "synthetic")

__all__ = ["SOURCE_NAMES", "DatasetListing", "SourceOptions", "VideoEntry", "list_videos"]


def list_videos(
    dataset: str, root: Path | str, options: SourceOptions | None = None
) -> DatasetListing:
    """List the videos of `dataset` under `root` from its official annotations."""
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
    module = importlib.import_module(f"actrec.data.sources.{dataset}")
    return module.list_videos(root, options or SourceOptions())
