"""Digests of weight files: SHA-256 and MD5 (cached per process), checked against the
digest Keras publishes and against a digest the user gives.

Standard library only: it does not import Keras.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from actrec.backbones.spec import BackboneSpec
from actrec.errors import WeightsError

READ_CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class FileDigests:
    sha256: str
    md5: str


_DIGEST_CACHE: dict[tuple[str, int, int], FileDigests] = {}


def file_digests(path: Path) -> FileDigests:
    """Returns the SHA-256 and MD5 of the file at `path` (read once; cached per process
    while the file's size and modification time stay the same)."""
    status = path.stat()
    key = (str(path.resolve()), status.st_size, status.st_mtime_ns)
    if key not in _DIGEST_CACHE:
        sha256, md5 = hashlib.sha256(), hashlib.md5()
        with path.open("rb") as stream:
            while chunk := stream.read(READ_CHUNK_BYTES):
                sha256.update(chunk)
                md5.update(chunk)
        _DIGEST_CACHE[key] = FileDigests(sha256.hexdigest(), md5.hexdigest())
    return _DIGEST_CACHE[key]


def verified_digests(
    path: Path, spec: BackboneSpec, expected_sha256: str | None = None
) -> FileDigests:
    """Returns the digests of `path` after checking them against the digest Keras
    publishes for `spec`'s weight file and against `expected_sha256` when given.

    A mismatch raises WeightsError naming the file, both digests and the download URL.
    """
    digests = file_digests(path)
    weights = spec.weights
    if weights.hash_algorithm == "md5" and digests.md5 != weights.file_hash:
        raise WeightsError(
            f"{path}: MD5 {digests.md5} does not match the digest Keras publishes for "
            f"{weights.file_name} ({weights.file_hash}): the file is truncated, corrupt or a "
            f"different file. Download it again from {weights.url}"
        )
    if expected_sha256 is not None and digests.sha256 != expected_sha256.strip().lower():
        raise WeightsError(
            f"{path}: SHA-256 {digests.sha256} does not match the expected "
            f"{expected_sha256.strip().lower()}: nothing was installed. Check the file and the "
            "digest you gave."
        )
    return digests


def verification_summary(spec: BackboneSpec, expected_sha256: str | None) -> str:
    """Returns what a successful `verified_digests` call checked, in words."""
    checks = []
    if spec.weights.hash_algorithm == "md5":
        checks.append(f"Keras's published MD5 {spec.weights.file_hash}")
    if spec.weights.hash_algorithm == "sha256-prefix":
        checks.append(
            f"the SHA-256 prefix {spec.weights.file_hash} of {spec.weights.source_file_name} "
            "(then converted to Keras weights)"
        )
    if expected_sha256 is not None:
        checks.append(f"the given SHA-256 {expected_sha256.strip().lower()}")
    if spec.weights.sha256_recorded_at_install:
        checks.append("its SHA-256, recorded now and checked on every use (no digest is published)")
    if not checks:
        return "nothing (Keras publishes no digest for this file)"
    return " and ".join(checks)


def check_source_digest(path: Path, spec: BackboneSpec, sha256: str) -> None:
    """WeightsError unless `sha256` (of the file at `path`) starts with the prefix the
    published file's name carries (torch.hub's convention: a PyTorch-layout backbone's
    file)."""
    weights = spec.weights
    if not sha256.startswith(weights.file_hash):
        raise WeightsError(
            f"{path}: SHA-256 {sha256} does not start with {weights.file_hash}, the digest "
            f"prefix of {weights.source_file_name}: the file is truncated, corrupt or another "
            f"file. Download it again from {weights.url}"
        )
