"""The path a command writes to: refused when a file stands on the way, its missing parent
folders created once every check has passed, and removed again when the command fails, so
that a refused or failed command leaves nothing behind. Cheap enough to run before
TensorFlow is imported (docs/architecture.md §1)."""

from __future__ import annotations

from pathlib import Path

from actrec.errors import OutputError


def refuse_a_file_on_the_way(path: Path | str, option: str) -> None:
    """OutputError when `path`, an output folder to create, or one of its parents is a file:
    the folders missing on the way are created once every check has passed
    (create_parents), so the only path that cannot be written is one through a file."""
    path = Path(path)
    for folder in (path, *path.parents):
        if folder.exists():
            if not folder.is_dir():
                where = "is a file" if folder == path else f"is a file, not a folder ({path})"
                raise OutputError(f"{folder} {where}; give another {option}")
            return


def create_parents(path: Path | str) -> list[Path]:
    """Creates the missing parent folders of `path` and returns those created, outermost
    first (for remove_created_parents when what follows fails)."""
    missing = [folder for folder in Path(path).parents if not folder.exists()]
    missing.reverse()
    for folder in missing:
        folder.mkdir(exist_ok=True)
    return missing


def remove_created_parents(created: list[Path]) -> None:
    """Removes the folders create_parents made, innermost first, where they are still
    empty: a refused or failed command leaves nothing behind."""
    for folder in reversed(created):
        try:
            folder.rmdir()
        except OSError:
            return
