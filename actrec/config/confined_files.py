"""Files read from a folder someone else made (a run, an export) stay inside it.

A run or an export is shared: a folder handed over may hold a symlink to a file of the
reader's (~/.ssh/id_rsa, another export's weights), or a recipe whose `extends:` names one
by an absolute, `..` or `~` path. actrec would read that file, and an error about what it
says could show part of it. So every file actrec reads from such a folder is checked here
before it is opened: its path, symlinks resolved, must lead inside the folder. A refusal
names the file and where it leads, never what that file holds.

A recipe given on the command line (`actrec train --recipe PATH`) is the user's own and is
not confined.
"""

from __future__ import annotations

import os
from pathlib import Path

from actrec.errors import ConfigError

RULE = "actrec reads only the files inside a shared run or export folder"


def file_in_folder(folder: Path | str, name: str | Path, what: str, fix: str) -> Path:
    """`folder / name` when `name` is a relative path that, symlinks resolved, leads inside
    `folder`; ConfigError naming the file, where it leads, `what` it is ("the recipe") and
    `fix` otherwise. Whether the file exists is the caller's to check."""
    folder = Path(folder)
    text = str(name)
    if Path(text).is_absolute() or text.startswith("~"):
        raise ConfigError(
            f"{folder}: {what} {text!r} is not a path inside the folder; {RULE}: {fix}"
        )
    path = folder / text
    target = path.resolve()
    if not target.is_relative_to(folder.resolve()):
        raise ConfigError(f"{path}: {what} leads outside {folder} (to {target}); {RULE}: {fix}")
    return path


def check_links_stay_inside(folder: Path | str, fix: str) -> None:
    """ConfigError naming the first symlink under `folder` (its files and subfolders, links
    not followed) that leads outside it."""
    folder = Path(folder)
    root = folder.resolve()
    for current, folders, files in os.walk(folder):
        for name in sorted(folders + files):
            entry = Path(current) / name
            if entry.is_symlink() and not entry.resolve().is_relative_to(root):
                raise ConfigError(
                    f"{entry}: a link leading outside {folder} (to {entry.resolve()}); "
                    f"{RULE}: {fix}"
                )
