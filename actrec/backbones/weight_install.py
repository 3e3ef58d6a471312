"""Installing weight files into the store: download (`fetch_weights`) or copy a file
downloaded elsewhere (`import_weights`); each file is checked against its digests before it
takes its final name, and recorded in the store's manifest.

A PyTorch-layout backbone's file (torchvision's, TSM's) is converted into the Keras file the
store keeps when it is installed; reading PyTorch files is actrec.published's, so every
caller says how (`convert`: actrec.published.imagenet.convert_imagenet_file, which `actrec
pretrained fetch / import` hand in; None refuses a PyTorch file).

Standard library only: it does not import Keras.
"""

from __future__ import annotations

import contextlib
import shutil
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from actrec.backbones.registry import (
    BACKBONES,
    published_weights,
    spec_for_weights_file,
    weighted_backbone_names,
)
from actrec.backbones.spec import BackboneSpec
from actrec.backbones.weight_digests import (
    READ_CHUNK_BYTES,
    check_source_digest,
    file_digests,
    verification_summary,
    verified_digests,
)
from actrec.backbones.weight_store import (
    OFFLINE_ENVIRONMENT,
    STORE_ENVIRONMENT,
    is_offline,
    missing_weights_message,
    record_installed,
    store_directory,
)
from actrec.errors import WeightsError
from actrec.files.atomic import commit_temporary, temporary_path
from actrec.progress import NullProgress, Progress

DOWNLOAD_TIMEOUT_SECONDS = 60

Converter = Callable[[Path, BackboneSpec, Path], None]
"""convert(PyTorch file, spec, destination): writes `spec`'s Keras weight file
(actrec.published.imagenet.convert_imagenet_file)."""


def _require_converter(spec: BackboneSpec, convert: Converter | None) -> None:
    """WeightsError when `spec`'s file is a PyTorch file and no conversion is handed in."""
    if spec.layout == "pytorch" and convert is None:
        raise WeightsError(
            f"{spec.weights.source_file_name} is a PyTorch file, converted when it is "
            f"installed: install it with `actrec pretrained fetch {spec.name}` or `actrec "
            "pretrained import FILE` (actrec.published.imagenet converts it)"
        )


def _install(
    spec: BackboneSpec,
    temporary: Path,
    directory: Path,
    source: str,
    expected_sha256: str | None,
    convert: Converter | None,
) -> Path:
    """Verifies `temporary` (inside `directory`) and renames it to the canonical name;
    on any failure the temporary file is removed and nothing is installed."""
    try:
        if spec.layout == "pytorch":
            temporary = _converted(spec, temporary, directory, expected_sha256, convert)
            digests = file_digests(temporary)
        else:
            digests = verified_digests(temporary, spec, expected_sha256)
        destination = directory / spec.weights.file_name
        commit_temporary(temporary, destination)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    record_installed(directory, spec, digests, source, verification_summary(spec, expected_sha256))
    return destination


def _converted(
    spec: BackboneSpec,
    temporary: Path,
    directory: Path,
    expected_sha256: str | None,
    convert: Converter,
) -> Path:
    """The PyTorch file `temporary` checked (its name's SHA-256 prefix, `expected_sha256`)
    and converted to a Keras weight file in `directory` (`convert`); the PyTorch file is
    removed. Returns the converted file's temporary path."""
    digests = verified_digests(temporary, spec, expected_sha256)
    check_source_digest(temporary, spec, digests.sha256)
    converted = directory / f".{spec.name}.converting.weights.h5"
    try:
        convert(temporary, spec, converted)
    except BaseException:
        with contextlib.suppress(OSError):
            converted.unlink()
        raise
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()
    return converted


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
    spec: BackboneSpec,
    url: str | None = None,
    directory: Path | None = None,
    expected_sha256: str | None = None,
    progress: Progress | None = None,
    *,
    convert: Converter | None,
) -> Path:
    """Downloads `spec`'s weight file into the store, checks it, and returns its path.

    url: another source (a mirror, or a file:// URL) instead of the published one.
    convert: how a PyTorch-layout backbone's file becomes the store's Keras file (see the
    module docstring); None refuses such a backbone.
    Raises WeightsError when offline (`$ACTREC_OFFLINE`), on a network error or on a
    digest mismatch; in every failure nothing is installed.
    """
    source = url or published_weights(spec).url
    _require_converter(spec, convert)
    if is_offline():
        raise WeightsError(
            f"${OFFLINE_ENVIRONMENT} is set, so {source} is not downloaded. "
            + missing_weights_message(spec)
        )
    directory = _prepared_store(directory)
    progress = progress or NullProgress()
    temporary = temporary_path(directory / spec.weights.file_name)
    try:
        with temporary.open("wb") as stream:
            with urllib.request.urlopen(source, timeout=DOWNLOAD_TIMEOUT_SECONDS) as response:
                length = response.headers.get("Content-Length")
                total = int(length) if length else None
                progress.start(f"download {spec.weights.file_name}", total)
                while chunk := response.read(READ_CHUNK_BYTES):
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
    return _install(spec, temporary, directory, source, expected_sha256, convert)


def import_weights(
    file: Path | str,
    spec: BackboneSpec | None = None,
    directory: Path | None = None,
    expected_sha256: str | None = None,
    *,
    convert: Converter | None,
) -> Path:
    """Copies a weight file downloaded elsewhere into the store after checking it, and
    returns the installed path.

    spec: whose file it is; by default found from the file name (its publisher's name).
    expected_sha256: also require this SHA-256 (the only check for MobileNetV2, for which
    Keras publishes no digest).
    convert: as for `fetch_weights`.
    A digest mismatch raises WeightsError and installs nothing.
    """
    source = Path(file).expanduser()
    if not source.is_file():
        raise WeightsError(f"{source} is not a file; give the downloaded weight file")
    if spec is not None:
        published_weights(spec)
    else:
        spec = spec_for_weights_file(source.name)
        if spec is None:
            known = ", ".join(
                BACKBONES[name].weights.file_name for name in weighted_backbone_names()
            )
            raise WeightsError(
                f"{source.name} is not a known weight file name (known: {known}); "
                "name the backbone with --backbone"
            )
    # Check before copying too, so a wrong file is rejected without a copy.
    digests = verified_digests(source, spec, expected_sha256)
    if spec.layout == "pytorch":
        check_source_digest(source, spec, digests.sha256)
    _require_converter(spec, convert)
    directory = _prepared_store(directory)
    temporary = temporary_path(directory / spec.weights.file_name)
    try:
        shutil.copyfile(source, temporary)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    return _install(spec, temporary, directory, str(source.resolve()), expected_sha256, convert)
