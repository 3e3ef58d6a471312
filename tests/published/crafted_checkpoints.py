"""Checkpoints whose pickle lies about its data, as a damaged or altered file would: one
integer of the first tensor's record changed in the bytes torch.save wrote (its storage's
declared number of values, or its offset into the storage). A helper module of the tests,
not a test file.
"""

from __future__ import annotations

import io
import pickle
import pickletools
import zipfile
from pathlib import Path


def _encoded(value: int) -> bytes:
    """`value` as one pickle opcode (BININT1, BININT or LONG1), as torch.save writes it."""
    return pickle.dumps(value, protocol=2)[2:-1]


def _first_record_integer(data: bytes, start: int, which: str) -> tuple[int, int]:
    """(first byte, end) of the opcode holding the first storage's declared values
    ("values": the last integer of its persistent id) or its tensor's storage offset
    ("offset": the integer after BINPERSID), in the pickle of `data` starting at `start`."""
    ops = list(pickletools.genops(io.BytesIO(data[start:])))
    index = next(i for i, (op, _, _) in enumerate(ops) if op.name == "BINPERSID")
    if which == "offset":
        return start + ops[index + 1][2], start + ops[index + 2][2]
    integer = next(
        i for i in range(index - 1, 0, -1) if ops[i][0].name.startswith(("BININT", "LONG"))
    )
    return start + ops[integer][2], start + ops[integer + 1][2]


def _edited(data: bytes, start: int, which: str, value: int) -> bytes:
    first, end = _first_record_integer(data, start, which)
    return data[:first] + _encoded(value) + data[end:]


def with_first_tensor_integer(path: Path, out: Path, which: str, value: int) -> Path:
    """A copy of checkpoint `path` at `out` whose first tensor declares `value` as its
    storage's number of values (which="values") or its storage offset (which="offset")."""
    data = Path(path).read_bytes()
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive, zipfile.ZipFile(out, "w") as copy:
            for info in archive.infolist():
                record = archive.read(info.filename)
                if info.filename.endswith("/data.pkl"):
                    record = _edited(record, 0, which, value)
                copy.writestr(info.filename, record)
        return out
    stream = io.BytesIO(data)
    for _ in range(3):  # the legacy format: magic number, protocol, system info, object
        for _ in pickletools.genops(stream):
            pass
    Path(out).write_bytes(_edited(data, stream.tell(), which, value))
    return out
