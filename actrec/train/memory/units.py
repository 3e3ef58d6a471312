"""Memory sizes and batch sizes as users write them: "2GiB", "512MiB", "auto"."""

from __future__ import annotations

import re

from actrec.config.recipe import AUTO
from actrec.errors import ConfigError

KIB, MIB, GIB = 2**10, 2**20, 2**30

_UNITS = {
    "": 1,
    "B": 1,
    "K": KIB,
    "KB": 1000,
    "KIB": KIB,
    "M": MIB,
    "MB": 1000**2,
    "MIB": MIB,
    "G": GIB,
    "GB": 1000**3,
    "GIB": GIB,
    "T": 2**40,
    "TB": 1000**4,
    "TIB": 2**40,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]*)\s*$")


def parse_memory_size(text: str | int) -> int:
    """Bytes in "2GiB", "512MiB", "1.5GB", "800M", "1KB" or a plain number of bytes.

    Binary units: KiB, MiB, GiB, TiB (and K, M, G, T); decimal: KB, MB, GB, TB.
    """
    if isinstance(text, int) and not isinstance(text, bool):
        value, unit = float(text), ""
    else:
        match = _SIZE.match(str(text))
        if match is None or match.group(2).upper() not in _UNITS:
            raise ConfigError(
                f"memory size {text!r} is not valid; write a number and a unit, e.g. 2GiB, "
                "512MiB, 1.5GB (binary units KiB/MiB/GiB, decimal KB/MB/GB)"
            )
        value, unit = float(match.group(1)), match.group(2).upper()
    size = int(value * _UNITS[unit])
    if size < 1:
        raise ConfigError(f"memory size {text!r} is not valid; it must be at least 1 byte")
    return size


def format_bytes(count: int | float | None) -> str:
    """'1.50 GiB', '312 MiB', '900 KiB', '12 B'; '-' for None."""
    if count is None:
        return "-"
    for unit, size in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if count >= size:
            value = count / size
            return f"{value:.2f} {unit}" if value < 10 else f"{value:.0f} {unit}"
    return f"{int(count)} B"


def parse_batch_size(text: str | int) -> int | str:
    """A whole number >= 1 or "auto" (the value of `--batch-size`)."""
    if isinstance(text, int) and not isinstance(text, bool) and text >= 1:
        return text
    value = str(text).strip().lower()
    if value == AUTO:
        return AUTO
    if value.isdigit() and int(value) >= 1:
        return int(value)
    raise ConfigError(
        f"--batch-size {text!r} is not valid; give a whole number >= 1 (the global batch) or "
        "auto (probe the largest batch that fits and runs fastest)"
    )
