"""Atomic file writes: temporary name in the same folder, fsync, rename, fsync the folder.

A crash leaves either the old file or the new one, never a half-written file under the
final name.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

TEMPORARY_SUFFIX = ".tmp"


def fsync_directory(directory: Path) -> None:
    """Make a rename inside `directory` durable."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def fsync_file(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def temporary_path(path: Path) -> Path:
    """The name a file is written under before it is renamed to `path`."""
    return path.with_name(f".{path.name}.{os.getpid()}{TEMPORARY_SUFFIX}")


def commit_temporary(temporary: Path, path: Path) -> None:
    """fsync `temporary`, rename it to `path`, fsync the folder."""
    fsync_file(temporary)
    os.replace(temporary, path)
    fsync_directory(path.parent)


def write_bytes_atomic(path: Path | str, data: bytes) -> None:
    path = Path(path)
    temporary = temporary_path(path)
    try:
        temporary.write_bytes(data)
        commit_temporary(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def write_text_atomic(path: Path | str, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: Path | str, value: Any) -> None:
    write_text_atomic(path, json.dumps(value, indent=2, sort_keys=False) + "\n")


def append_line_durably(path: Path, line: str) -> None:
    """Append one line and fsync; a torn last line is ignored by readers (see read_json_lines)."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line.rstrip("\n") + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def read_json_lines(path: Path) -> list[dict]:
    """The complete JSON lines of `path`; a torn (crash-interrupted) line is dropped."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return rows
