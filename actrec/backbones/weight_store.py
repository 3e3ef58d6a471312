"""The local store of ImageNet weight files: the folders searched (in order), the store's
manifest.json (the SHA-256 of every file it installed), and the missing-file message.

Standard library only: it does not import Keras.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from actrec.backbones.spec import BackboneSpec
from actrec.backbones.weight_digests import FileDigests
from actrec.errors import WeightsError
from actrec.files.atomic import write_text_atomic

STORE_ENVIRONMENT = "ACTREC_PRETRAINED"
OFFLINE_ENVIRONMENT = "ACTREC_OFFLINE"
MANIFEST_NAME = "manifest.json"


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


def record_installed(
    directory: Path, spec: BackboneSpec, digests: FileDigests, source: str, verified_against: str
) -> None:
    """Record an installed file's digests and source in `directory`'s manifest.json."""
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
    write_text_atomic(directory / MANIFEST_NAME, text)


def check_store_record(path: Path, digests: FileDigests) -> bool:
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


def missing_weights_message(spec: BackboneSpec) -> str:
    """Returns the error text for a weight file that is not available locally."""
    searched = ", ".join(str(directory) for directory in search_directories())
    weights = spec.weights
    downloaded = weights.source_file_name or weights.file_name
    return (
        f"ImageNet weights for backbone {spec.name!r} are not available: no file "
        f"{weights.file_name} in {searched}. On a machine with internet access download "
        f"{weights.url} and copy it here, then run `actrec pretrained import "
        f"PATH/{downloaded}`; or, where this machine may download, run "
        f"`actrec pretrained fetch {spec.name}`."
    )


def unrecorded_file_message(path: Path, spec: BackboneSpec) -> str:
    """Returns the error text for a store file with no published digest whose SHA-256 no
    installation recorded (copied in by hand): it has nothing to be checked against."""
    return (
        f"{path}: no digest is published for {spec.weights.file_name} and the store's "
        f"{MANIFEST_NAME} records no SHA-256 for it (copied in by hand?), so nothing can "
        f"check it. Install it with `actrec pretrained import PATH/{spec.weights.file_name}` "
        "(add --sha256 HEX when a mirror publishes one), which records its SHA-256 and checks "
        "it on every use"
    )
