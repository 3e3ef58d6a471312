"""Where a backbone's ImageNet weight file resolves from, checked against its digests;
the store itself (actrec.backbones.weight_store), digests (weight_digests) and installing
(weight_install) live beside it; import their names from them.

Resolution order for a backbone's no-top ImageNet file (docs/architecture.md §4):

1. an explicit path (a file the caller vouches for: it is not hash-checked);
2. the store: `$ACTREC_PRETRAINED` when set, otherwise `pretrained/` in the working
   directory or in the source checkout;
3. the Keras cache, `$KERAS_HOME/models` (default `~/.keras/models`);
4. a download into the store, only when asked for (`fetch_weights`, or
   `allow_download=True`), never when `$ACTREC_OFFLINE` is 1.

Digests: Keras publishes an MD5 digest for every file here but MobileNetV2's (see
actrec.backbones.registry); a file that does not match it is never used or installed. The
store records the SHA-256 of every file it installs in `manifest.json` and checks it on
every use, which also covers MobileNetV2 (`sha256_recorded_at_install`: a store copy of it
without that record is refused); `import_weights(..., expected_sha256=...)` checks a digest
of the user's own (a mirror's published SHA-256, for example).

Standard library only: listing and importing weights does not import Keras.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from actrec.backbones.registry import BACKBONES, published_weights
from actrec.backbones.spec import BackboneSpec
from actrec.backbones.weight_digests import verified_digests
from actrec.backbones.weight_install import fetch_weights
from actrec.backbones.weight_store import (
    check_store_record,
    keras_cache_directory,
    missing_weights_message,
    store_directories,
    unrecorded_file_message,
)
from actrec.errors import WeightsError
from actrec.progress import Progress

__all__ = [
    "WeightsStatus",
    "all_weights_status",
    "check_found_file",
    "resolve_weights",
    "weights_status",
]


@dataclass(frozen=True)
class WeightsStatus:
    """Where a backbone's weight file is: `path` is None when it is nowhere local."""

    spec: BackboneSpec
    path: Path | None
    location: str  # "store", "keras cache" or "missing"


def weights_status(spec: BackboneSpec) -> WeightsStatus:
    """Returns where `spec`'s weight file is found locally (no hashing)."""
    for directory in store_directories():
        candidate = directory / spec.weights.file_name
        if candidate.is_file():
            return WeightsStatus(spec, candidate, "store")
    candidate = keras_cache_directory() / spec.weights.file_name
    if candidate.is_file():
        return WeightsStatus(spec, candidate, "keras cache")
    return WeightsStatus(spec, None, "missing")


def all_weights_status() -> list[WeightsStatus]:
    """Returns the status of every registered backbone's weight file (the test networks
    have none)."""
    return [weights_status(spec) for spec in BACKBONES.values() if spec.weights is not None]


def check_found_file(status: WeightsStatus) -> str:
    """Checks a file found locally against Keras's published digest and, in the store,
    against the SHA-256 recorded when it was installed; returns what was checked, in
    words. Raises WeightsError on a mismatch."""
    digests = verified_digests(status.path, status.spec)
    checks = []
    if status.spec.weights.hash_algorithm == "md5":
        checks.append("Keras's MD5")
    if status.location == "store" and check_store_record(status.path, digests):
        checks.append("the SHA-256 recorded at installation")
    elif status.location == "store" and status.spec.weights.sha256_recorded_at_install:
        raise WeightsError(unrecorded_file_message(status.path, status.spec))
    if not checks:  # a Keras-cache copy of a file with no published digest
        return "nothing (no digest is published; `actrec pretrained import` records its SHA-256)"
    return " and ".join(checks)


def resolve_weights(
    spec: BackboneSpec,
    path: Path | str | None = None,
    allow_download: bool = False,
    progress: Progress | None = None,
) -> Path:
    """Returns the path of `spec`'s no-top ImageNet weight file, checked.

    path: an explicit file, used as given (not hash-checked: it may be your own weights).
    allow_download: download into the store when no local copy exists (a PyTorch file is
    refused: `actrec pretrained fetch` converts it).
    Raises WeightsError when the file is missing (naming the file, its URL and the import
    command) or fails its digest check.
    """
    if path is not None:
        explicit = Path(path).expanduser()
        if not explicit.is_file():
            raise WeightsError(
                f"weights file {explicit} does not exist; give an existing file, or "
                "'imagenet' to use the store"
            )
        return explicit
    published_weights(spec)  # a test network has no ImageNet file: say so, not "missing"
    status = weights_status(spec)
    if status.path is not None:
        check_found_file(status)
        return status.path
    if allow_download:
        return fetch_weights(spec, progress=progress, convert=None)
    raise WeightsError(missing_weights_message(spec))
