"""The local store of ImageNet weight files: where weights resolve from, and how files
get there (download or import), each checked against its published digest.

Resolution order for a backbone's no-top ImageNet file (DESIGN.md §4):

1. an explicit path (a file the caller vouches for: it is not hash-checked);
2. the store: `$ACTREC_PRETRAINED` when set, otherwise `pretrained/` in the working
   directory or in the source checkout;
3. the Keras cache, `$KERAS_HOME/models` (default `~/.keras/models`);
4. a download into the store, only when asked for (`fetch_weights`, or
   `allow_download=True`), never when `$ACTREC_OFFLINE` is 1.

Digests: Keras publishes an MD5 digest for every file here but MobileNetV2's (see
actrec.models.backbones); a file that does not match it is never used or installed. The
store records the SHA-256 of every file it installs in `manifest.json` and checks it on
every use, which also covers MobileNetV2; `import_weights(..., expected_sha256=...)` checks
a digest of the user's own (a mirror's published SHA-256, for example).

Standard library only: listing and importing weights does not import Keras.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from actrec.errors import WeightsError
from actrec.models.backbones import BACKBONES, BackboneSpec, backbone_spec, spec_for_weights_file
from actrec.progress import NullProgress, Progress

STORE_ENVIRONMENT = "ACTREC_PRETRAINED"
OFFLINE_ENVIRONMENT = "ACTREC_OFFLINE"
MANIFEST_NAME = "manifest.json"
_CHUNK = 1 << 20
_DOWNLOAD_TIMEOUT_SECONDS = 60


def is_offline() -> bool:
    """Returns True when `$ACTREC_OFFLINE` forbids downloads (1, true, yes)."""
    return os.environ.get(OFFLINE_ENVIRONMENT, "").strip().lower() in {"1", "true", "yes"}


def _checkout_store() -> Path:
    """Returns the `pretrained/` folder of the source checkout this package runs from."""
    return Path(__file__).resolve().parents[2] / "pretrained"


def store_directories() -> list[Path]:
    """Returns the store folders searched, in order (existing ones only, except an
    explicitly configured `$ACTREC_PRETRAINED`, which is the only store when set)."""
    configured = os.environ.get(STORE_ENVIRONMENT)
    if configured:
        return [Path(configured).expanduser()]
    candidates = [Path.cwd() / "pretrained", _checkout_store()]
    unique: list[Path] = []
    for candidate in candidates:
        if candidate.is_dir() and candidate.resolve() not in [path.resolve() for path in unique]:
            unique.append(candidate)
    return unique


def store_directory() -> Path:
    """Returns the store folder that fetch and import write into."""
    directories = store_directories()
    return directories[0] if directories else Path.cwd() / "pretrained"


def keras_cache_directory() -> Path:
    """Returns the folder where Keras caches downloaded weights (`$KERAS_HOME/models`)."""
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    return Path(home) / "models"


def search_directories() -> list[Path]:
    """Returns every folder a weight file is looked up in, in order."""
    return [*store_directories(), keras_cache_directory()]


# --- digests ---------------------------------------------------------------------------


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
            while chunk := stream.read(_CHUNK):
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
    if expected_sha256 is not None:
        checks.append(f"the given SHA-256 {expected_sha256.strip().lower()}")
    if not checks:
        return "nothing (Keras publishes no digest for this file)"
    return " and ".join(checks)


# --- the store manifest --------------------------------------------------------------


def read_manifest(directory: Path) -> dict:
    """Returns the store manifest of `directory` ({"files": {}} when there is none)."""
    path = directory / MANIFEST_NAME
    if not path.is_file():
        return {"files": {}}
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise WeightsError(
            f"{path}: unreadable store manifest ({error}); fix or delete it, then import "
            "the weight files again"
        ) from None
    manifest.setdefault("files", {})
    return manifest


def _write_atomically(path: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _record_installed(
    directory: Path, spec: BackboneSpec, digests: FileDigests, source: str, verified_against: str
) -> None:
    manifest = read_manifest(directory)
    manifest["files"][spec.weights.file_name] = {
        "backbone": spec.name,
        "sha256": digests.sha256,
        "md5": digests.md5,
        "verified_against": verified_against,
        "source": source,
        "installed": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    _write_atomically(directory / MANIFEST_NAME, text.encode())


def _check_store_record(path: Path, digests: FileDigests) -> bool:
    """Returns whether the store manifest records a SHA-256 for `path`; raises
    WeightsError when it records another one than the file's."""
    record = read_manifest(path.parent)["files"].get(path.name)
    if not record:
        return False
    if record.get("sha256") != digests.sha256:
        raise WeightsError(
            f"{path}: SHA-256 {digests.sha256} differs from the {record.get('sha256')} recorded "
            f"when it was installed: the file changed since. Delete it and run "
            f"`actrec pretrained fetch {record.get('backbone', '<backbone>')}` or "
            "`actrec pretrained import FILE` again"
        )
    return True


# --- resolution ----------------------------------------------------------------------


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
    """Returns the status of every registered backbone's weight file."""
    return [weights_status(spec) for spec in BACKBONES.values()]


def check_found_file(status: WeightsStatus) -> str:
    """Checks a file found locally against Keras's published digest and, in the store,
    against the SHA-256 recorded when it was installed; returns what was checked, in
    words. Raises WeightsError on a mismatch."""
    digests = verified_digests(status.path, status.spec)
    checks = []
    if status.spec.weights.hash_algorithm == "md5":
        checks.append("Keras's MD5")
    if status.location == "store" and _check_store_record(status.path, digests):
        checks.append("the SHA-256 recorded at installation")
    return " and ".join(checks) or "nothing (Keras publishes no digest for this file)"


def missing_weights_message(spec: BackboneSpec) -> str:
    """Returns the error text for a weight file that is not available locally."""
    searched = ", ".join(str(directory) for directory in search_directories())
    weights = spec.weights
    return (
        f"ImageNet weights for backbone {spec.name!r} are not available: no file "
        f"{weights.file_name} in {searched}. On a machine with internet access download "
        f"{weights.url} and copy it here, then run `actrec pretrained import "
        f"PATH/{weights.file_name}`; or, where this machine may download, run "
        f"`actrec pretrained fetch {spec.name}`."
    )


def resolve_weights(
    backbone: str,
    path: Path | str | None = None,
    allow_download: bool = False,
    progress: Progress | None = None,
) -> Path:
    """Returns the path of `backbone`'s no-top ImageNet weight file, checked.

    path: an explicit file, used as given (not hash-checked: it may be your own weights).
    allow_download: download into the store when no local copy exists.
    Raises WeightsError when the file is missing (naming the file, its URL and the import
    command) or fails its digest check.
    """
    spec = backbone_spec(backbone)
    if path is not None:
        explicit = Path(path).expanduser()
        if not explicit.is_file():
            raise WeightsError(
                f"weights file {explicit} does not exist; give an existing file, or "
                "'imagenet' to use the store"
            )
        return explicit
    status = weights_status(spec)
    if status.path is not None:
        check_found_file(status)
        return status.path
    if allow_download:
        return fetch_weights(backbone, progress=progress)
    raise WeightsError(missing_weights_message(spec))


# --- installing ----------------------------------------------------------------------


def _install(
    spec: BackboneSpec, temporary: Path, directory: Path, source: str, expected_sha256: str | None
) -> Path:
    """Verifies `temporary` (inside `directory`) and renames it to the canonical name;
    on any failure the temporary file is removed and nothing is installed."""
    try:
        digests = verified_digests(temporary, spec, expected_sha256)
        with temporary.open("rb") as stream:
            os.fsync(stream.fileno())
        destination = directory / spec.weights.file_name
        os.replace(temporary, destination)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    _record_installed(directory, spec, digests, source, verification_summary(spec, expected_sha256))
    return destination


def _prepared_store(directory: Path | None) -> Path:
    directory = Path(directory) if directory is not None else store_directory()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise WeightsError(
            f"cannot create the weights store {directory} ({error}); set "
            f"${STORE_ENVIRONMENT} to a writable folder"
        ) from None
    return directory


def fetch_weights(
    backbone: str,
    url: str | None = None,
    directory: Path | None = None,
    expected_sha256: str | None = None,
    progress: Progress | None = None,
) -> Path:
    """Downloads `backbone`'s weight file into the store, checks it, and returns its path.

    url: another source (a mirror, or a file:// URL) instead of Keras's published one.
    Raises WeightsError when offline (`$ACTREC_OFFLINE`), on a network error or on a
    digest mismatch; in every failure nothing is installed.
    """
    spec = backbone_spec(backbone)
    source = url or spec.weights.url
    if is_offline():
        raise WeightsError(
            f"${OFFLINE_ENVIRONMENT} is set, so {source} is not downloaded. "
            + missing_weights_message(spec)
        )
    directory = _prepared_store(directory)
    progress = progress or NullProgress()
    handle, name = tempfile.mkstemp(dir=directory, prefix=f".{spec.weights.file_name}.")
    temporary = Path(name)
    try:
        with os.fdopen(handle, "wb") as stream:
            with urllib.request.urlopen(source, timeout=_DOWNLOAD_TIMEOUT_SECONDS) as response:
                length = response.headers.get("Content-Length")
                total = int(length) if length else None
                progress.start(f"download {spec.weights.file_name}", total)
                while chunk := response.read(_CHUNK):
                    stream.write(chunk)
                    progress.advance(len(chunk))
            stream.flush()
        progress.finish()
    except (urllib.error.URLError, OSError, ValueError) as error:
        progress.finish()
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise WeightsError(
            f"download of {source} failed ({error}). " + missing_weights_message(spec)
        ) from None
    except BaseException:
        progress.finish()
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    return _install(spec, temporary, directory, source, expected_sha256)


def import_weights(
    file: Path | str,
    backbone: str | None = None,
    directory: Path | None = None,
    expected_sha256: str | None = None,
) -> Path:
    """Copies a weight file downloaded elsewhere into the store after checking it, and
    returns the installed path.

    backbone: whose file it is; by default found from the file name (Keras's name).
    expected_sha256: also require this SHA-256 (the only check for MobileNetV2, for which
    Keras publishes no digest).
    A digest mismatch raises WeightsError and installs nothing.
    """
    source = Path(file).expanduser()
    if not source.is_file():
        raise WeightsError(f"{source} is not a file; give the downloaded weight file")
    if backbone is not None:
        spec = backbone_spec(backbone)
    else:
        spec = spec_for_weights_file(source.name)
        if spec is None:
            known = ", ".join(spec.weights.file_name for spec in BACKBONES.values())
            raise WeightsError(
                f"{source.name} is not a known weight file name (known: {known}); "
                "name the backbone with --backbone"
            )
    # Check before copying too, so a wrong file is rejected without a copy.
    verified_digests(source, spec, expected_sha256)
    directory = _prepared_store(directory)
    handle, name = tempfile.mkstemp(dir=directory, prefix=f".{spec.weights.file_name}.")
    os.close(handle)
    temporary = Path(name)
    try:
        shutil.copyfile(source, temporary)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    return _install(spec, temporary, directory, str(source.resolve()), expected_sha256)
