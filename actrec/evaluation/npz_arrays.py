"""Reading the arrays of an .npz file that may be cut, damaged or not ours, without a
traceback and without allocating what a header merely declares.

np.load reads an .npy member's header and allocates the array it declares before it reads
a byte of data, so a header declaring 1e12 rows is a MemoryError, and a cut archive is a
zipfile.BadZipFile: neither is an error a user can act on. `read_arrays` reads every
member's header first (numpy's read_array_header_1_0 / _2_0), checks the kinds, gives the
declared shapes to the caller's check (a part's: its rows), and refuses a member declaring
more bytes than the file can hold, before any array is read (allow_pickle=False: data, never code).
"""

from __future__ import annotations

import math
import zipfile
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

DEFLATE_RATIO_MAX = 1100  # deflate compresses at most about 1032:1
_READ_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,
    OSError,
    EOFError,
    ValueError,
    KeyError,
    NotImplementedError,  # a compression method zipfile does not read
    MemoryError,
    OverflowError,
)


def read_arrays(
    path: Path,
    kinds: Mapping[str, str],
    check_shapes: Callable[[dict[str, tuple[int, ...]]], None] | None = None,
    optional: tuple[str, ...] = (),
) -> dict[str, np.ndarray]:
    """The arrays `kinds` names (name -> the dtype kinds allowed, e.g. "iu") from the .npz
    at `path`; those in `optional` may be absent.

    check_shapes(declared shapes by name) runs after every header is read and before any
    array is: it raises what it finds wrong (an ActrecError passes through unchanged).
    ValueError saying what is wrong with the file otherwise: the caller names the file and
    the fix.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            members = {info.filename: info for info in archive.infolist()}
            file_bytes = Path(path).stat().st_size
            names = [name for name in kinds if name not in optional or f"{name}.npy" in members]
            headers = {}
            for name in names:
                if f"{name}.npy" not in members:
                    raise ValueError(f"it has no {name!r} array")
                headers[name] = _header(archive, members[f"{name}.npy"], kinds[name])
            if check_shapes is not None:
                check_shapes({name: shape for name, (shape, _) in headers.items()})
            for name, (shape, dtype) in headers.items():
                _check_size(members[f"{name}.npy"], shape, dtype, file_bytes)
            arrays = {}
            for name in names:
                with archive.open(members[f"{name}.npy"]) as member:
                    arrays[name] = np.lib.format.read_array(member, allow_pickle=False)
            return arrays
    except _READ_ERRORS as error:
        raise ValueError(_reason(error)) from None


def _header(archive, info: zipfile.ZipInfo, kinds: str) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype member `info` declares; ValueError unless of one of `kinds`."""
    with archive.open(info) as member:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(member)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(member)
        else:
            raise ValueError(f"{info.filename} is an .npy of version {version}, not 1.0 or 2.0")
    if dtype.kind not in kinds or dtype.hasobject:
        raise ValueError(f"{info.filename} holds {dtype} values, not of kind {', '.join(kinds)}")
    return tuple(shape), dtype


def _check_size(info: zipfile.ZipInfo, shape: tuple, dtype: np.dtype, file_bytes: int) -> None:
    """ValueError if member `info` declares more bytes than the file can hold."""
    declared = math.prod(shape) * dtype.itemsize
    stored_max = info.compress_size * (
        1 if info.compress_type == zipfile.ZIP_STORED else DEFLATE_RATIO_MAX
    )
    if info.compress_size > file_bytes or declared > min(info.file_size, stored_max):
        raise ValueError(
            f"{info.filename} declares shape {shape} of {dtype} ({declared} bytes), more than "
            f"the {min(info.file_size, file_bytes)} bytes it holds"
        )


def _reason(error: BaseException) -> str:
    if isinstance(error, MemoryError):
        return "damaged: it declares arrays too large to read"
    if isinstance(error, zipfile.BadZipFile | EOFError | zlib.error):
        return f"cut or damaged: {error or type(error).__name__}"
    return str(error) or type(error).__name__
