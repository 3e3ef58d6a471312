"""Shard FILES checked against what `actrec prepare` recorded in the manifest.

`actrec prepare` records each shard file's size and SHA-256:

    manifest["shard_files"] = {"train-00000-of-00012.tfrecord": {"bytes": 156237812,
                                                                 "sha256": "9f2c..."}, ...}

Checks, from cheap to thorough:

- sizes (one stat per file): `actrec train` / `actrec eval` at start, so a copy cut short
  or a full disk is named before hours of training;
- SHA-256 (reads every byte): `actrec inspect`, a re-run of `actrec prepare` (which then
  re-makes the damaged shards, actrec.data.prepare.repair), and a read error in the middle of a
  run (TensorFlow's DataLossError names an offset, never a file: the split's shards are
  checked to find the one at fault).

A manifest written before this record existed has no "shard_files": nothing is checked.
This module works on whole files only; what is inside a record is actrec.data.format.shards'.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from actrec.data.format.manifest import MANIFEST_FILE, read_manifest
from actrec.errors import DatasetError
from actrec.progress import NullProgress, Progress

SHARD_FILES_KEY = "shard_files"
READ_CHUNK_BYTES = 4 * 1024 * 1024
MAX_PROBLEMS_NAMED = 5
# What TensorFlow's record reader says about a damaged TFRecord file.
_TFRECORD_DAMAGE = re.compile(r"(truncated|corrupted) record at \d+")


@dataclass(frozen=True)
class ShardProblem:
    """A shard file that is not what the manifest records.

    kind: "missing", "size" or "checksum" (right size, other bytes).
    expected / found: bytes for "size", SHA-256 hex for "checksum", None for "missing".
    """

    name: str
    split: str
    kind: str
    expected: int | str | None = None
    found: int | str | None = None

    def describe(self) -> str:
        """What is wrong, e.g. "has 97873 bytes, the manifest records 132423 (truncated...)"."""
        if self.kind == "missing":
            return "is missing"
        if self.kind == "size":
            cause = (
                "truncated: a copy cut short or a full disk"
                if self.found < self.expected
                else "longer than prepared: changed after preparation"
            )
            return f"has {self.found} bytes, the manifest records {self.expected} ({cause})"
        return (
            f"has the recorded size but another SHA-256 ({str(self.found)[:12]}..., the manifest "
            f"records {str(self.expected)[:12]}...): its bytes changed on disk or in a copy"
        )


def file_sha256(path: Path, progress: Progress | None = None) -> str:
    """SHA-256 hex digest of a file, read in chunks (progress counts them as bytes=...)."""
    progress = progress or NullProgress()
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(READ_CHUNK_BYTES):
            digest.update(chunk)
            progress.advance(0, bytes=len(chunk))
    return digest.hexdigest()


def describe_shard_files(
    folder: Path, names: Iterable[str], progress: Progress | None = None
) -> dict[str, dict]:
    """{name: {"bytes", "sha256"}} of the shard files `names` in `folder` (for the manifest)."""
    progress = progress or NullProgress()
    names = list(names)
    progress.start("checksumming shards", len(names))
    described = {}
    try:
        for name in names:
            described[name] = {
                "bytes": (folder / name).stat().st_size,
                "sha256": file_sha256(folder / name, progress),
            }
            progress.advance(1)
    finally:
        progress.finish()
    return described


def _recorded_shards(manifest: dict, splits: Iterable[str] | None) -> list[tuple[str, str, dict]]:
    """(split, name, recorded {"bytes", "sha256"}) of the shards of `splits` (default all)
    that the manifest records."""
    recorded = manifest.get(SHARD_FILES_KEY) or {}
    chosen = manifest.get("splits", {}) if splits is None else splits
    return [
        (split, name, recorded[name])
        for split in chosen
        for name in manifest.get("splits", {}).get(split, {}).get("shards", [])
        if name in recorded
    ]


def shard_problems(
    prepared_dir: Path | str,
    manifest: dict,
    splits: Iterable[str] | None = None,
    *,
    checksums: bool = True,
    progress: Progress | None = None,
) -> list[ShardProblem]:
    """The shards of `splits` (default: every split) that differ from the manifest: missing,
    another size, or (with `checksums`) the right size but another SHA-256."""
    prepared_dir = Path(prepared_dir)
    progress = progress or NullProgress()
    shards = _recorded_shards(manifest, splits)
    problems, to_hash = [], []
    for split, name, recorded in shards:
        path = prepared_dir / name
        if not path.is_file():
            problems.append(ShardProblem(name, split, "missing"))
        elif path.stat().st_size != recorded["bytes"]:
            found = path.stat().st_size
            problems.append(ShardProblem(name, split, "size", recorded["bytes"], found))
        elif checksums:
            to_hash.append((split, name, recorded))
    if to_hash:
        progress.start("verifying shard checksums", len(to_hash))
        try:
            for split, name, recorded in to_hash:
                found = file_sha256(prepared_dir / name, progress)
                if found != recorded["sha256"]:
                    problems.append(
                        ShardProblem(name, split, "checksum", recorded["sha256"], found)
                    )
                progress.advance(1)
        finally:
            progress.finish()
    return sorted(problems, key=lambda problem: problem.name)


def repair_hint(prepared_dir: Path | str) -> str:
    """The fix for damaged shards, for messages."""
    return (
        f"run `actrec inspect {prepared_dir}` to list every damaged shard, then re-run the "
        f"`actrec prepare` command that made {prepared_dir}: it re-makes only the damaged "
        "shards from their videos"
    )


def _listed(problems: list[ShardProblem], prepared_dir: Path) -> str:
    named = [f"{prepared_dir / p.name} {p.describe()}" for p in problems[:MAX_PROBLEMS_NAMED]]
    more = len(problems) - MAX_PROBLEMS_NAMED
    return "; ".join(named) + (f"; and {more} more" if more > 0 else "")


def check_shard_sizes(prepared_dir: Path | str, splits: Iterable[str]) -> None:
    """DatasetError naming every shard of `splits` that is missing or has another size than
    the manifest records (one stat per file: cheap enough for every start)."""
    prepared_dir = Path(prepared_dir)
    problems = shard_problems(prepared_dir, read_manifest(prepared_dir), splits, checksums=False)
    if problems:
        raise DatasetError(
            f"damaged prepared data: {_listed(problems, prepared_dir)}. Fix: "
            f"{repair_hint(prepared_dir)}"
        )


def read_error_summary(error: BaseException) -> str:
    """ "corrupted record at 65503" from TensorFlow's long DataLossError text."""
    text = getattr(error, "message", None) or str(error)
    found = _TFRECORD_DAMAGE.search(text)
    return found.group(0) if found else text.strip().splitlines()[0][:200]


def data_loss_error(
    prepared_dir: Path | str,
    splits: Iterable[str],
    error: BaseException,
    kept: str = "",
) -> DatasetError:
    """The DatasetError for a read error (tf.errors.DataLossError) while reading `splits`:
    the shards are checked (sizes, then checksums) to name the damaged one(s).

    kept: what was kept, for the message (e.g. "the checkpoints in RUN/checkpoints are
    kept; continue with --resume once the data is repaired").
    """
    prepared_dir = Path(prepared_dir)
    splits = list(splits)
    problems = shard_problems(prepared_dir, read_manifest(prepared_dir), splits)
    what = read_error_summary(error)
    if problems:
        found = _listed(problems, prepared_dir)
    elif not (read_manifest(prepared_dir).get(SHARD_FILES_KEY)):
        found = (
            f"{prepared_dir / MANIFEST_FILE} records no shard checksums (prepared by an older "
            "actrec), so the damaged shard cannot be named"
        )
    else:
        found = (
            f"every shard of the {', '.join(splits)} split(s) now matches the manifest, so the "
            "error came from the storage while reading (retry, and check the file system)"
        )
    return DatasetError(
        f"reading the prepared data in {prepared_dir} failed ({what}): {found}. Fix: "
        f"{repair_hint(prepared_dir)}" + (f". {kept}" if kept else "")
    )
