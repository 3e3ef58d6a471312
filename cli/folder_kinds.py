"""What a folder given on the command line is, told by the names of the files it holds, and
the refusals of a folder of the wrong kind: checks cheap enough to run before TensorFlow is
imported, so that an argument mistake is answered at once (docs/architecture.md §1). The
paths a command writes to are checked by actrec.files.output_paths.

    export     actrec.json     the --out of `actrec export`  (it also holds a recipe.yaml)
    run        run.json        the --workdir of `actrec train`, the --out of `pretrained convert`
    prepared   manifest.json   the --out of `actrec prepare`
    partial    .actrec-partial/  a preparation that was interrupted
    videos     video files (here or one folder down): a dataset not prepared yet

Only names are looked at (nothing is parsed): the library's readers (actrec.runs.trained,
actrec.export.metadata, actrec.data.format.manifest) still check what the files say.
"""

from __future__ import annotations

import os
from pathlib import Path

from actrec.data.format.manifest import MANIFEST_FILE
from actrec.data.sources.base import VIDEO_EXTENSIONS
from actrec.errors import ConfigError, DatasetError
from actrec.export.metadata import METADATA_FILE
from actrec.runs.folder import RUN_FILE

PARTIAL_DIR = ".actrec-partial"
"""The folder an unfinished `actrec prepare` keeps in its output (actrec.data.prepare)."""

_SCANNED_ENTRIES = 200
"""Entries looked at per folder when looking for videos: a check, not a listing."""

DESCRIPTIONS = {
    "export": "an export folder (the --out of `actrec export`)",
    "run": "a run folder (the --workdir of `actrec train`)",
    "prepared": "a prepared data folder (the --out of `actrec prepare`)",
    "partial": "an interrupted preparation (re-run the same `actrec prepare` command to finish it)",
    "videos": "a folder of videos that are not prepared",
    "empty": "an empty folder",
    "file": "a file",
}


def _is_video(name: str) -> bool:
    return not name.startswith(".") and os.path.splitext(name)[1].lower() in VIDEO_EXTENSIONS


def _holds_videos(folder: Path, depth: int = 2) -> bool:
    try:
        with os.scandir(folder) as entries:
            for count, entry in enumerate(entries):
                if count >= _SCANNED_ENTRIES:
                    return False
                if entry.is_file() and _is_video(entry.name):
                    return True
                below = depth > 1 and entry.is_dir() and not entry.name.startswith(".")
                if below and _holds_videos(Path(entry.path), depth - 1):
                    return True
    except OSError:
        return False
    return False


def folder_kind(path: Path | str) -> str | None:
    """ "export", "run", "prepared", "partial", "videos", "empty", "file", "other", or None
    when nothing is at `path`."""
    path = Path(path)
    if not path.exists():
        return None
    if not path.is_dir():
        return "file"
    for kind, name in (("export", METADATA_FILE), ("run", RUN_FILE), ("prepared", MANIFEST_FILE)):
        if (path / name).is_file():
            return kind
    if (path / PARTIAL_DIR).is_dir():
        return "partial"
    if _holds_videos(path):
        return "videos"
    try:
        return "other" if any(path.iterdir()) else "empty"
    except OSError:
        return "other"


def _subject(path: Path, kind: str | None, wanted: str, file_name: str) -> str:
    """What `path` is, said against what was `wanted`."""
    if kind is None:
        return f"{path}: no such folder"
    if kind in DESCRIPTIONS:
        return f"{path} is {DESCRIPTIONS[kind]}, not {wanted}"
    return f"{path} is not {wanted} (it has no {file_name})"


RUN_SOURCES = (
    "the --workdir of a finished `actrec train`, or the --out of `actrec pretrained convert`"
)


def require_run(path: Path | str, command: str) -> None:
    """ConfigError unless `path` is a run folder (it holds run.json); the message says what
    the folder is instead and what `command` (e.g. "eval") takes."""
    path = Path(path)
    kind = folder_kind(path)
    if kind == "run":
        return
    fix = {
        "export": f"{command} takes the run folder it was exported from (its {METADATA_FILE} "
        "names it)",
        "prepared": f"train on it first (actrec train --recipe NAME --data {path} --workdir "
        f"RUN), then {command} RUN",
        "videos": f"prepare them (actrec prepare folder --root {path} --out PREPARED) and train "
        f"on them (actrec train --data PREPARED --workdir RUN) first, then {command} RUN",
    }.get(kind, f"{command} takes a run folder: {RUN_SOURCES}")
    raise ConfigError(f"{_subject(path, kind, 'a run', RUN_FILE)}; {fix}")


def require_export(path: Path | str, option: str = "--model") -> None:
    """ConfigError unless `path` is an export folder (it holds actrec.json)."""
    path = Path(path)
    kind = folder_kind(path)
    if kind == "export":
        return
    fix = {
        "run": f"export it first (actrec export {path} --out EXPORT), then give {option} EXPORT",
    }.get(kind, f"{option} takes the --out folder of `actrec export`")
    raise ConfigError(f"{_subject(path, kind, 'an export', METADATA_FILE)}; {fix}")


def require_run_or_export(path: Path | str, option: str) -> None:
    """ConfigError unless `path` is a run folder or an export folder."""
    path = Path(path)
    kind = folder_kind(path)
    if kind in ("run", "export"):
        return
    raise ConfigError(
        f"{_subject(path, kind, 'a run or an export', RUN_FILE)}; {option} takes {RUN_SOURCES}, "
        "or an `actrec export` folder"
    )


def require_prepared(path: Path | str, option: str = "--data") -> None:
    """DatasetError unless `path` is a prepared data folder (it holds manifest.json)."""
    path = Path(path)
    kind = folder_kind(path)
    if kind == "prepared":
        return
    if kind == "partial":
        raise DatasetError(
            f"{path} has no {MANIFEST_FILE}: its preparation was interrupted; re-run the same "
            "`actrec prepare` command to finish it"
        )
    fix = {
        "videos": f"prepare them first (actrec prepare folder --root {path} --out PREPARED), "
        f"then give {option} PREPARED",
        "run": f"give {option} the prepared data it trained on (its {RUN_FILE} names it)",
    }.get(kind, f"{option} takes the --out folder of `actrec prepare`")
    raise DatasetError(f"{_subject(path, kind, 'prepared data', MANIFEST_FILE)}; {fix}")
