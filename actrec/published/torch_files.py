"""A published PyTorch checkpoint read into numpy arrays, without running any of its code.

A `.pth` / `.pth.tar` file is a pickle (in torch.save's zip format, or the legacy format
torch < 1.6 wrote), and a pickle may name any Python callable to rebuild its objects. actrec
reads it with `torch.load(..., weights_only=True)` only: tensors, containers and numbers, plus
the few inert globals the published files hold beside their tensors:

    numpy scalars, dtypes, arrays   mmengine-era files (mmaction2 1.x): metric values and the
                                    arrays inside the message hub's HistoryBuffers
    mmengine HistoryBuffer,         the message hub's bookkeeping; loaded as `_SkippedObject`
    MessageHub                      (a placeholder that only keeps its state), then skipped
    builtins.getattr                written by pickle for HistoryBuffer's statistics methods
                                    (`getattr(HistoryBuffer, "mean")`); answered by
                                    `_skipped_attribute`, which looks nothing up

A file naming any other global (os.system, eval, an unknown class) is refused with its names:
loading it would run code, and actrec never does. The state dict is found where TSM,
mmaction2 and torchvision put it; the rest of the file is skipped.
"""

from __future__ import annotations

import hashlib
import pickle
import pickletools
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from actrec.errors import WeightsError
from actrec.published.storage_sizes import (
    STATE_DICT_KEYS,
    check_declared_sizes,
    check_element_count,
)
from actrec.published.tensor_checks import check_tensor_values

SKIPPED_CLASSES = (
    "mmengine.logging.history_buffer.HistoryBuffer",
    "mmengine.logging.message_hub.MessageHub",
)
"""mmengine's training bookkeeping (Runner.save_checkpoint's `message_hub`), read as data."""

INSTALL_TORCH = 'pip install "actrec[torch]"'
ZIP_MAGIC = b"PK\x03\x04"
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
# torch.save's legacy format starts with its magic number, pickled (protocol 2) as LONG1.
LEGACY_MAGIC = b"\x8a\x0a" + (0x1950A86A20F9469CFC6C).to_bytes(10, "little")
_REFUSAL_MARKERS = (
    "Unsupported global",
    "unsupported GLOBAL",
    "unrecognized function",
    "Can only create new object",
    "Can only build",
    "getattr of",
)
_GLOBAL_NAME = re.compile(r"GLOBAL (\S+)")
_TORCH_ADVICE = ("Weights only load failed", "(1)", "(2)", "Check the documentation", "\x1b")
_NUMPY_CORES = ("numpy.core", "numpy._core")


@dataclass(frozen=True)
class TorchCheckpoint:
    """A PyTorch checkpoint file's tensors and its plain metadata.

    state_dict: every tensor of the state dict, key as stored (a DataParallel `module.`
        prefix kept) -> array in PyTorch's layout and dtype (Conv2d weight [O, I, kh, kw],
        Linear weight [K, F], BatchNorm running stats [C] float32, num_batches_tracked []
        int64).
    metadata: the file's other top-level entries whose values are numbers, strings or lists
        of them (e.g. {"epoch": 50, "arch": "resnet50", "best_prec1": 74.1}).
    file_format: "zip" (torch >= 1.6) or "legacy".
    sha256: hex digest of the file's bytes.
    """

    path: Path
    state_dict: dict[str, np.ndarray]
    metadata: dict
    file_format: str
    sha256: str


def read_torch_checkpoint(path: Path | str) -> TorchCheckpoint:
    """Reads the PyTorch checkpoint at `path` (torch.save of a state dict, or of a dict holding
    one) with no code run; WeightsError naming the file when it is missing, not a
    checkpoint, truncated, holds no tensors, or would need code to load, and naming the
    tensor when one declares more data than the file stores (checked before anything is
    allocated) or holds values that would poison training (NaN / inf, a negative BatchNorm
    variance: actrec.published.tensor_checks)."""
    path = Path(path)
    if not path.is_file():
        raise WeightsError(f"{path}: no such file; give the path of a PyTorch .pth file")
    torch = _torch_module(path)
    file_format = _file_format(path)
    loaded = _loaded_object(torch, path, file_format)
    state_key, state = _state_dict_entries(torch, loaded, path)
    for key, value in state.items():  # again, as loaded: whatever the declarations said
        values = value.untyped_storage().nbytes() // value.element_size()
        check_element_count(path, key, tuple(value.shape), values)
    state_dict = {key: _array(torch, value) for key, value in state.items()}
    check_tensor_values(path, state_dict)
    return TorchCheckpoint(
        path=path,
        state_dict=state_dict,
        metadata=_metadata(torch, loaded, state_key),
        file_format=file_format,
        sha256=_sha256(path),
    )


def _torch_module(path: Path):
    """torch, imported here so that actrec needs it only to read PyTorch files."""
    try:
        import torch
    except ImportError:
        raise WeightsError(
            f"{path}: reading a PyTorch checkpoint needs torch; install it with {INSTALL_TORCH}"
        ) from None
    return torch


def _file_format(path: Path) -> str:
    """The file's format, "zip" or "legacy", from its first bytes; WeightsError for any other
    file."""
    with path.open("rb") as file:
        head = file.read(32)
    if head.startswith(ZIP_MAGIC):
        if not zipfile.is_zipfile(path):
            raise WeightsError(
                f"{path}: a zip archive without its directory (the end of the file): the "
                "file is truncated or damaged; download it again"
            )
        return "zip"
    if LEGACY_MAGIC in head:
        return "legacy"
    if head.startswith(HDF5_MAGIC):
        raise WeightsError(
            f"{path} is an HDF5 file (Keras weights?), not a PyTorch checkpoint; give the "
            "published .pth / .pth.tar file"
        )
    raise WeightsError(
        f"{path} is not a PyTorch checkpoint (neither torch.save's zip format nor its legacy "
        f"format{', the file is empty' if not head else ''}); give the published .pth / "
        ".pth.tar file"
    )


class _SkippedObject:
    """What an mmengine bookkeeping object loads as: its pickled state kept as data, no
    method of the real class run. torch's weights-only unpickler calls `__new__` (NEWOBJ)
    and `__setstate__` (BUILD) of an allowed class: both only store what they are given."""

    def __new__(cls, *args, **kwargs):
        return super().__new__(cls)

    def __setstate__(self, state) -> None:
        self.state = state


def _skipped_attribute(owner, name: str) -> _SkippedObject:
    """What `getattr(owner, name)` in a pickle gives: a placeholder when `owner` is a skipped
    class (pickle protocol 2 writes HistoryBuffer's methods so), never a real attribute."""
    if owner is not _SkippedObject:
        raise pickle.UnpicklingError(
            f"getattr of {name!r} on {owner!r}: only attributes of skipped mmengine "
            "bookkeeping classes are read"
        )
    return _SkippedObject()


def _numpy_multiarray():
    """numpy's multiarray module: numpy._core.multiarray (NumPy 2), numpy.core.multiarray."""
    try:
        from numpy._core import multiarray
    except ImportError:  # NumPy 1.x
        from numpy.core import multiarray
    return multiarray


def _allowed_globals() -> list:
    """The inert globals allowed beside torch's own (tensors, storages, OrderedDict, Counter,
    _codecs.encode for protocol-2 bytes), as (object, name in the file) or a class."""
    multiarray = _numpy_multiarray()
    numpy_globals = [
        # scalar(dtype, raw bytes) -> one numpy number; _reconstruct + ndarray.__setstate__
        # -> an array from its shape, dtype and raw bytes; dtype(code) -> a dtype. Pickle
        # spells the module numpy.core (NumPy 1) or numpy._core (NumPy 2).
        *[(multiarray.scalar, f"{module}.multiarray.scalar") for module in _NUMPY_CORES],
        *[(multiarray._reconstruct, f"{m}.multiarray._reconstruct") for m in _NUMPY_CORES],
        (np.ndarray, "numpy.ndarray"),
        (np.dtype, "numpy.dtype"),
    ]
    # Not named in the file, but BUILD of a dtype checks its class (numpy.dtypes.Float64DType,
    # ...); only the numeric and boolean ones, whose state is a byte order and flags.
    dtype_classes = sorted({type(np.dtype(code)) for code in "?bBhHiIlLqQefdFD"}, key=str)
    skipped = [(_SkippedObject, name) for name in SKIPPED_CLASSES]
    return [*numpy_globals, *dtype_classes, *skipped, (_skipped_attribute, "builtins.getattr")]


def _loaded_object(torch, path: Path, file_format: str):
    """The unpickled checkpoint, by torch.load(weights_only=True) with `_allowed_globals`,
    once the sizes it declares are checked against the data it stores."""
    # safe_globals removes its globals on exit: leave out any the caller had allowed already.
    known = torch.serialization.get_safe_globals()
    allowed = [item for item in _allowed_globals() if item not in known]
    with torch.serialization.safe_globals(allowed):
        if file_format == "zip":
            _check_globals(torch, path)
        check_declared_sizes(path, file_format)  # before torch.load allocates them
        try:
            # map_location: published files hold CUDA storages; weights_only=True passed
            # explicitly also wins over TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD.
            return torch.load(path, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError as error:
            if file_format == "legacy" and not _legacy_pickles_complete(path):
                raise _damaged(path, "its data ends early") from None
            raise _load_error(path, str(error)) from None
        except EOFError:
            raise _damaged(path, "its data ends early") from None
        except Exception as error:  # cut or corrupt data fails in many ways
            # (struct.error, RuntimeError from the zip reader, ...); every refusal to run
            # code is an UnpicklingError, handled above
            raise _damaged(path, str(error) or type(error).__name__) from None


def _check_globals(torch, path: Path) -> None:
    """WeightsError naming the globals of a zip checkpoint that are not allowed, read from its
    pickle without unpickling it (the legacy format cannot be read so: torch.load's own
    refusal is translated by `_load_error`)."""
    try:
        unsafe = torch.serialization.get_unsafe_globals_in_checkpoint(str(path))
    except pickle.UnpicklingError:
        return  # an opcode the scan does not know: torch.load's weights-only reader decides
    except (RuntimeError, ValueError, EOFError) as error:
        raise WeightsError(
            f"{path} is a zip archive but not a torch.save checkpoint ({error}); give the "
            "published .pth / .pth.tar file"
        ) from None
    if unsafe:
        raise _refusal(path, sorted(unsafe))


def _legacy_pickles_complete(path: Path) -> bool:
    """Whether the legacy file's first four pickles (magic number, protocol, system info, the
    checkpoint) are whole: a file cut inside a global's name reads as that name cut short,
    which torch refuses as an unknown global. pickletools only parses, it builds nothing."""
    with path.open("rb") as file:
        try:
            for _ in range(4):
                for _ in pickletools.genops(file):
                    pass
        except Exception:  # the parser's ValueError for data that ends early, or garbage
            return False
    return True


def _load_error(path: Path, message: str) -> WeightsError:
    """The WeightsError for torch.load's weights-only UnpicklingError `message` (torch's advice
    to load with weights_only=False around the reason, which this drops)."""
    lines = [line.split("WeightsUnpickler error:")[-1].strip() for line in message.splitlines()]
    reasons = [line for line in lines if line and not line.startswith(_TORCH_ADVICE)]
    refusals = [line for line in reasons if any(m in line for m in _REFUSAL_MARKERS)]
    if refusals:
        names = [_full_name(name) for name in _GLOBAL_NAME.findall(refusals[0])]
        return _refusal(path, names, refusals[0])
    reason = reasons[0] if reasons else message
    if "Unsupported operand" in reason:
        return WeightsError(
            f"{path}: its pickle uses an instruction torch's weights-only reader does not read "
            f"({reason}): pickle protocol 4 or later, or a damaged file; actrec reads files "
            "saved with torch.save's default protocol (2)"
        )
    return _damaged(path, reason)


def _full_name(name: str) -> str:
    """A global's full name (torch's messages drop the `builtins.` of eval, exec, ...)."""
    return name if "." in name else f"builtins.{name}"


def _refusal(path: Path, names: list[str], detail: str = "") -> WeightsError:
    shown = ", ".join(names) if names else detail
    return WeightsError(
        f"{path} cannot be read without running code: its pickle needs {shown}, which is not "
        "a tensor, a number or a known inert type. actrec never runs code from a checkpoint; "
        "use a file that holds only weights (a state dict)"
    )


def _damaged(path: Path, detail: str) -> WeightsError:
    return WeightsError(
        f"{path}: not a readable PyTorch checkpoint, the file is truncated or damaged "
        f"({detail}); download it again"
    )


def _state_dict_entries(torch, loaded, path: Path) -> tuple[str | None, dict]:
    """(key of the state dict in the checkpoint or None when the checkpoint is the state
    dict itself, its tensor entries); WeightsError when there are none."""
    if not isinstance(loaded, dict):
        raise WeightsError(
            f"{path} holds a {type(loaded).__name__}, not a state dict; give a checkpoint "
            "saved from model.state_dict()"
        )
    if loaded and all(isinstance(value, torch.Tensor) for value in loaded.values()):
        return None, loaded
    for key in STATE_DICT_KEYS:
        tensors = _tensor_entries(torch, loaded.get(key))
        if tensors:
            return key, tensors
    raise WeightsError(
        f"{path} holds no state dict: no tensors at its top level nor under "
        f"{', '.join(repr(key) for key in STATE_DICT_KEYS)} (its keys: "
        f"{', '.join(sorted(map(str, loaded))[:10]) or 'none'})"
    )


def _tensor_entries(torch, value) -> dict:
    """The tensor entries of `value` when it is a dict, else {}."""
    if not isinstance(value, dict):
        return {}
    return {key: item for key, item in value.items() if isinstance(item, torch.Tensor)}


def _array(torch, tensor) -> np.ndarray:
    """`tensor` as a numpy array of the same shape and dtype (bfloat16, which numpy lacks, as
    float32)."""
    tensor = tensor.detach()
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.float()
    return tensor.numpy()


def _metadata(torch, loaded: dict, state_key: str | None) -> dict:
    """The top-level entries besides the state dict that are plain data (see
    `_plain_value`); the rest (optimizer state, message hub, nested dicts) is skipped."""
    if state_key is None:
        return {}
    metadata = {}
    for key, value in loaded.items():
        plain = _plain_value(torch, value)
        if key != state_key and isinstance(key, str) and plain is not _NOT_PLAIN:
            metadata[key] = plain
    return metadata


_NOT_PLAIN = object()
METADATA_ITEMS = 10_000
"""The most values one metadata entry may hold, nested lists counted (a shared list each
time it is reached): a pickle can share one list under 2^40 paths in 2 KB."""
METADATA_DEPTH = 8
"""The deepest nesting of lists a metadata entry may have."""


def _plain_value(torch, value, visited: list[int] | None = None, depth: int = 0):
    """`value` as JSON-able data (None, bool, int, float, str, or lists of them, at most
    METADATA_ITEMS values and METADATA_DEPTH levels; a numpy scalar or a one-element tensor
    as its number), else _NOT_PLAIN. `visited` counts the values seen so far."""
    visited = [0] if visited is None else visited
    visited[0] += 1
    if visited[0] > METADATA_ITEMS or depth > METADATA_DEPTH:
        return _NOT_PLAIN
    if isinstance(value, np.generic):  # before float: np.float64 is a float subclass
        return value.item() if value.dtype.kind in "biuf" else _NOT_PLAIN
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_complex():
        return value.item()  # an old TSN / TSM best_prec1, saved as a tensor
    if not isinstance(value, (list, tuple)):
        return _NOT_PLAIN
    items = []
    for item in value:  # stops at the first value that is not plain
        plain = _plain_value(torch, item, visited, depth + 1)
        if plain is _NOT_PLAIN:
            return _NOT_PLAIN
        items.append(plain)
    return items


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
