"""The feature cache of a probe: one split's clip features on disk, trusted only when its
record matches.

    CACHE/KEY/SPLIT.npz    features float32 [V, views, D], labels int32 [V], video_ids [V]
    CACHE/KEY/SPLIT.json   what it is: its CacheKey (backbone, view, split, data), the
                           arrays' shapes, the .npz's size and SHA-256

KEY is CacheKey.folder_name (the backbone and the view). Both files are written atomically,
the .npz first, so a record always describes a complete file. A file is used only when its
record's key is the one asked for and the .npz's SHA-256 is the recorded one; anything else
(missing, another key, changed bytes, an unreadable file) is a miss, said in one line
(`CacheLookup.reason`), and the caller recomputes the split and replaces both files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from actrec import __version__
from actrec.data.format.integrity import file_sha256
from actrec.evaluation.npz_arrays import read_arrays
from actrec.files.atomic import commit_temporary, write_json_atomic
from actrec.train.probe.cache_key import CacheKey

CACHE_DIR = "feature_cache"
WHAT = "actrec probe feature cache: clip features of one prepared split (actrec.train.probe)"


@dataclass(frozen=True)
class SplitFeatures:
    """One split's cached features: features float32 [V, views, D] (row v: the split's
    video v, its views in the view spec's order), labels int32 [V], video_ids [V]."""

    features: np.ndarray
    labels: np.ndarray
    video_ids: np.ndarray

    @property
    def width(self) -> int:
        return int(self.features.shape[-1])


@dataclass(frozen=True)
class CacheLookup:
    """A split's cache read back: `features` when it can be used, else None and `reason`,
    the line saying why it is recomputed (None when there was no cache yet)."""

    features: SplitFeatures | None
    reason: str | None = None


def split_files(folder: Path, split: str) -> tuple[Path, Path]:
    """(SPLIT.npz, SPLIT.json) of a cache folder."""
    return folder / f"{split}.npz", folder / f"{split}.json"


def read_split_features(folder: Path, key: CacheKey) -> CacheLookup:
    """The features cached in `folder` for `key`'s split when its record matches `key` and
    its bytes the recorded SHA-256; else a miss with the reason (see the module)."""
    arrays_path, record_path = split_files(folder, key.split)
    if not record_path.exists() and not arrays_path.exists():
        return CacheLookup(None)
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
        recorded_key, recorded_sha256 = record["key"], record["sha256"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        return CacheLookup(None, f"{record_path} cannot be read ({error}): recomputing it")
    changed = key.differences(recorded_key if isinstance(recorded_key, dict) else {})
    if changed:
        return CacheLookup(
            None, f"{arrays_path} was computed {' and '.join(changed)}: recomputing it"
        )
    if not arrays_path.is_file():
        return CacheLookup(None, f"{arrays_path} is missing: recomputing it")
    found = file_sha256(arrays_path)
    if found != recorded_sha256:
        return CacheLookup(
            None,
            f"{arrays_path} is damaged (SHA-256 {found[:12]}..., its record says "
            f"{str(recorded_sha256)[:12]}...): recomputing it",
        )
    try:
        arrays = read_arrays(arrays_path, {"features": "f", "labels": "i", "video_ids": "U"})
    except ValueError as error:
        return CacheLookup(None, f"{arrays_path} cannot be read ({error}): recomputing it")
    return CacheLookup(SplitFeatures(arrays["features"], arrays["labels"], arrays["video_ids"]))


def write_split_features(folder: Path, key: CacheKey, features: SplitFeatures) -> None:
    """Both files of `key`'s split in `folder` (made if missing), each atomically, the .npz
    first."""
    folder.mkdir(parents=True, exist_ok=True)
    arrays_path, record_path = split_files(folder, key.split)
    # np.savez adds ".npz" to a name without it: the temporary name keeps the suffix
    temporary = arrays_path.with_name(f".{arrays_path.stem}.tmp.npz")
    try:
        np.savez(
            temporary,
            features=features.features.astype(np.float32),
            labels=features.labels.astype(np.int32),
            video_ids=features.video_ids.astype(str),
        )
        commit_temporary(temporary, arrays_path)
    finally:
        temporary.unlink(missing_ok=True)
    write_json_atomic(
        record_path,
        {
            "what": WHAT,
            "actrec": __version__,
            "key": key.to_json(),
            "videos": int(features.features.shape[0]),
            "views": int(features.features.shape[1]),
            "width": features.width,
            "file": arrays_path.name,
            "bytes": arrays_path.stat().st_size,
            "sha256": file_sha256(arrays_path),
        },
    )
