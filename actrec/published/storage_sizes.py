"""The sizes a PyTorch checkpoint declares for its tensors, checked against the bytes it
stores, before torch.load allocates anything.

torch.load allocates each storage at the size its pickle declares (the legacy format before
it reads a byte of the data: a file that declares 10^12 float32 values over 16 stored bytes
asks for 4 TB), then lays each tensor's shape and strides over it. This module reads those
declarations first, with a pickle reader of its own that builds no object of the file: every
global the pickle names (tensor rebuild functions, storage types, anything else) is answered
by an inert record, so no code of the file and none of torch runs. It compares

    each storage's declared bytes    with the bytes the file holds for it (the zip format's
                                     data/KEY record; the legacy format's size header and the
                                     data after it)
    each tensor's extent             (offset + sum((size - 1) * stride) + 1) with its
                                     storage's declared values
    each tensor's element count      (the product of its sizes, whatever its strides: zero
                                     strides show 4 stored values as 10^12) with its
                                     storage's declared values, and all tensors' counts
                                     together with twice the values the file stores (a
                                     weight shared by two names)

and raises WeightsError naming the tensor. The walk over the file's objects visits each
object once: a pickle may share one list under many (40 nested levels of a list holding
the one below twice are 2^40 paths in 2 KB). A file this reader cannot follow is left to
torch.load's own checks and error messages (actrec.published.torch_files).
"""

from __future__ import annotations

import io
import math
import mmap
import pickle
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path

from actrec.errors import WeightsError

STATE_DICT_KEYS = ("state_dict", "model", "model_state")
"""Where a checkpoint dict keeps its state dict: TSM and mmaction2; other common layouts."""

SHARED_VALUES_LIMIT = 2
"""How many times over a file's tensors may declare the values it stores: a weight shared
by two names (tied weights) declares its values twice."""
_TENSOR_REBUILDS = {"_rebuild_tensor", "_rebuild_tensor_v2"}
_PARAMETER_REBUILDS = {"_rebuild_parameter", "_rebuild_parameter_with_state"}
_SIZE_HEADER = struct.Struct("<q")  # the legacy format's element count before a storage's data
ELEMENT_BYTES = {
    "DoubleStorage": 8,
    "FloatStorage": 4,
    "HalfStorage": 2,
    "BFloat16Storage": 2,
    "LongStorage": 8,
    "IntStorage": 4,
    "ShortStorage": 2,
    "CharStorage": 1,
    "ByteStorage": 1,
    "BoolStorage": 1,
    "ComplexDoubleStorage": 16,
    "ComplexFloatStorage": 8,
    "UntypedStorage": 1,
}
"""Bytes per value of the storage types torch.save names (torch/storage.py's typed storages;
a quantised or other type is left to torch.load)."""


@dataclass(frozen=True)
class _Storage:
    key: str
    type_name: str
    declared_values: int


@dataclass(frozen=True)
class _Tensor:
    storage: object
    offset: object
    shape: object
    stride: object


class _Inert:
    """What any other global of the file reads as: it keeps nothing and runs nothing."""

    def __new__(cls, *args, **kwargs):
        return super().__new__(cls)

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __setstate__(self, state) -> None:
        pass

    def __call__(self, *args, **kwargs) -> _Inert:
        return _Inert()


class _Dict(dict):
    """An OrderedDict of the file (a state dict keeps `_metadata` as its state: dropped)."""

    def __setstate__(self, state) -> None:
        pass


def _tensor(storage, offset, shape, stride, *rest) -> _Tensor:
    return _Tensor(storage, offset, shape, stride)


def _parameter(data, *rest):
    return data


class _StorageType:
    def __init__(self, name: str) -> None:
        self.name = name


class _DeclarationReader(pickle.Unpickler):
    """A pickle reader that records storages and tensors and builds nothing else."""

    def find_class(self, module: str, name: str):
        if module == "torch._utils" and name in _TENSOR_REBUILDS:
            return _tensor
        if module == "torch._utils" and name in _PARAMETER_REBUILDS:
            return _parameter
        if (module, name) == ("collections", "OrderedDict"):
            return _Dict
        if module == "torch" and name.endswith("Storage"):
            return _StorageType(name)
        return type(name, (_Inert,), {})

    def persistent_load(self, saved_id):
        if not isinstance(saved_id, tuple) or saved_id[:1] not in (("storage",), (b"storage",)):
            return _Inert()
        # zip: (type, key, location, values); legacy: the same and a view (torch < 0.4),
        # whose tensors are checked against the root storage
        storage_type, key, _location, declared = saved_id[1:5]
        name = storage_type.name if isinstance(storage_type, _StorageType) else ""
        return _Storage(str(key), name, declared)


def check_declared_sizes(path: Path, file_format: str) -> None:
    """WeightsError naming the tensor when `path` declares a storage larger than the bytes it
    holds, or a tensor larger than its storage; nothing is allocated at the declared sizes."""
    try:
        if file_format == "zip":
            tensors, stored_bytes = _zip_declarations(path)
        else:
            tensors, stored_bytes = _legacy_declarations(path)
    except Exception:  # a file this reader cannot follow: torch.load's checks decide
        return
    for key, (name, storage) in _storages(tensors).items():
        element_bytes = ELEMENT_BYTES.get(storage.type_name)
        if element_bytes is None or not isinstance(storage.declared_values, int):
            continue
        declared = storage.declared_values * element_bytes
        stored = stored_bytes.get(key, 0)
        if storage.declared_values < 0 or declared > stored:
            raise WeightsError(
                f"{path}: tensor {name!r} declares {storage.declared_values} values "
                f"({declared} bytes) but the file stores {stored} bytes for it: the file is "
                "truncated or damaged (or was altered); download it again or check its source"
            )
    for name, tensor in tensors:
        _check_extent(path, name, tensor)
    _check_element_counts(path, tensors)


def _check_extent(path: Path, name: str, tensor: _Tensor) -> None:
    """WeightsError when `tensor`'s shape, strides and offset reach past its storage."""
    shape, stride, offset = tensor.shape, tensor.stride, tensor.offset
    well_formed = (
        isinstance(shape, tuple)
        and isinstance(stride, tuple)
        and len(shape) == len(stride)
        and all(isinstance(value, int) and value >= 0 for value in (offset, *shape, *stride))
        and isinstance(tensor.storage.declared_values, int)
    )
    if not well_formed:
        raise WeightsError(
            f"{path}: tensor {name!r} has a malformed shape {shape!r}, strides {stride!r} or "
            f"offset {offset!r}: the file is damaged or was altered; download it again or "
            "check its source"
        )
    reach = sum((size - 1) * step for size, step in zip(shape, stride, strict=True))
    needed = 0 if 0 in shape else offset + 1 + reach
    if needed > tensor.storage.declared_values:
        raise WeightsError(
            f"{path}: tensor {name!r} of shape {tuple(shape)} needs {needed} values but its "
            f"storage declares {tensor.storage.declared_values}: the file is damaged or was "
            "altered; download it again or check its source"
        )


def check_element_count(path: Path, name: str, shape: tuple, storage_values: int) -> None:
    """WeightsError when tensor `name` of `shape` declares more values than its storage
    holds (`storage_values`): strides that repeat values (zero strides) would make every
    reader of the tensor (a numpy copy, a NaN check) allocate the declared count."""
    values = math.prod(shape)
    if values > storage_values:
        raise WeightsError(
            f"{path}: tensor {name!r} of shape {tuple(shape)} declares {values} values but "
            f"its storage holds {storage_values} (its strides repeat values): the file was "
            "altered or is damaged; download it again or check its source"
        )


def _check_element_counts(path: Path, tensors: list[tuple[str, _Tensor]]) -> None:
    """WeightsError naming the tensor whose element count exceeds its storage's values, or
    past which the tensors together declare more than SHARED_VALUES_LIMIT times the values
    of their storages."""
    stored = sum(storage.declared_values for _, storage in _storages(tensors).values())
    total = 0
    for name, tensor in tensors:
        check_element_count(path, name, tensor.shape, tensor.storage.declared_values)
        total += math.prod(tensor.shape)
        if total > SHARED_VALUES_LIMIT * stored:
            raise WeightsError(
                f"{path}: its tensors up to {name!r} declare {total} values over the {stored} "
                f"its storages hold (more than {SHARED_VALUES_LIMIT} names per value): the "
                "file was altered or is damaged; download it again or check its source"
            )


def _storages(tensors: list[tuple[str, _Tensor]]) -> dict[str, tuple[str, _Storage]]:
    """{storage key: (the name of its first tensor, the storage)}."""
    storages: dict[str, tuple[str, _Storage]] = {}
    for name, tensor in tensors:
        storages.setdefault(tensor.storage.key, (name, tensor.storage))
    return storages


def _zip_declarations(path: Path) -> tuple[list, dict[str, int]]:
    """(the named tensor records, {storage key: bytes stored}) of a zip checkpoint, whose
    storage KEY is the record data/KEY beside data.pkl."""
    with zipfile.ZipFile(path) as archive:
        records = {info.filename: info.file_size for info in archive.infolist()}
        (pickle_name,) = [name for name in records if name.endswith("/data.pkl")]
        loaded = _DeclarationReader(io.BytesIO(archive.read(pickle_name))).load()
    prefix = pickle_name[: -len("data.pkl")] + "data/"
    stored = {
        name[len(prefix) :]: size for name, size in records.items() if name.startswith(prefix)
    }
    return list(_named_tensors(loaded, ())), stored


def _legacy_declarations(path: Path) -> tuple[list, dict[str, int]]:
    """The same for the legacy format: pickles of its magic number, protocol, system info,
    the object and its storage keys; then per key an element count and the storage's
    bytes (read where they are, never allocated)."""
    with path.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        for _ in range(3):
            _DeclarationReader(data).load()
        tensors = list(_named_tensors(_DeclarationReader(data).load(), ()))
        keys = _DeclarationReader(data).load()
        storages = _storages(tensors)
        stored = {}
        for key in map(str, keys):
            header = data.read(_SIZE_HEADER.size)
            if len(header) < _SIZE_HEADER.size:
                break
            (count,) = _SIZE_HEADER.unpack(header)
            element_bytes = ELEMENT_BYTES.get(storages[key][1].type_name, 1)
            stored[key] = max(0, min(count * element_bytes, len(data) - data.tell()))
            data.seek(stored[key], 1)
    return tensors, stored


def _named_tensors(value, keys: tuple[str, ...]):
    """(name, tensor record) of every tensor in `value`'s dicts, lists and tuples, each
    object visited once (depth first, in file order); a state dict's tensor is named by its
    key, any other by its path."""
    seen: set[int] = set()
    pending = [(keys, value)]
    while pending:
        keys, value = pending.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, _Tensor) and isinstance(value.storage, _Storage):
            yield _tensor_name(keys), value
        elif isinstance(value, dict):
            items = [((*keys, str(key)), item) for key, item in value.items()]
            pending.extend(reversed(items))
        elif isinstance(value, (list, tuple)):
            items = [((*keys, str(index)), item) for index, item in enumerate(value)]
            pending.extend(reversed(items))


def _tensor_name(keys: tuple[str, ...]) -> str:
    if len(keys) == 2 and keys[0] in STATE_DICT_KEYS:
        return keys[1]
    return "/".join(keys) or "(the file's only tensor)"
