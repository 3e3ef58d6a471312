"""What files hold, to compare: a Keras weights file's arrays, a folder's digests."""

from __future__ import annotations

import hashlib
from pathlib import Path

import h5py
import numpy as np


def weight_file_arrays(path: Path) -> list[np.ndarray]:
    """Every array of a Keras .weights.h5 file, in file order."""
    arrays = []
    with h5py.File(path, "r") as handle:
        handle.visititems(
            lambda name, item: arrays.append(np.array(item)) if hasattr(item, "shape") else None
        )
    return arrays


def folder_digests(folder: Path) -> dict[str, str]:
    """relative path -> sha256 of every file under `folder` (to prove nothing changed)."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }
