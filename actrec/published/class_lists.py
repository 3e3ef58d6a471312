"""Class names for a converted published model: built-in lists, or a user's file.

A published checkpoint's classifier has one output per class, in the label order its source
trained with. The built-in lists (``classes/<name>.txt`` beside this module) hold the names
in that order for the datasets TSM (mit-han-lab/temporal-shift-module) and mmaction2 released
models for; each file's ``#`` header says which repository file it was copied from and why
its order is the model's. Names are spelled as ``actrec prepare`` spells that dataset's
classes (Kinetics: the CSV label, e.g. "passing American football (in game)"), so a model
converted here and a dataset prepared by actrec agree on "the same classes".

Where the sources disagree on the order, a suffixed list holds the other order:
``jester`` is TSM's (sorted) and ``jester-mmaction2`` mmaction2's (the line order of
jester-v1-labels.csv); ``hmdb51`` is mmaction2's and actrec's (sorted) and ``hmdb51-tsn``
TSN's class_list.txt order, which TSM's data preparation (done with TSN's tools) follows.
Kinetics-400, Something-Something V2 and UCF101 have one order in both sources.

A class file (``--classes FILE``) holds one class name per line, line i naming output i.
Blank lines and lines starting with ``#`` are skipped; surrounding spaces are dropped.
Numbered lines are accepted too: when every line is "<number> <name>" and the numbers run
0, 1, 2, ... or 1, 2, 3, ... in order (UCF101's classInd.txt, mmaction2's generated HMDB51
classInd.txt), the numbers are dropped. mmaction2's label_map*.txt files are plain name
lists. A name that itself starts with a number and a space is read as numbered only when
every line looks like that and the numbers count up from 0 or 1.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from actrec.errors import ConfigError

CLASSES_FOLDER = Path(__file__).resolve().parent / "classes"
CLASS_LISTS: tuple[str, ...] = tuple(
    sorted(path.stem for path in CLASSES_FOLDER.glob("*.txt")) or ("(none shipped)",)
)
"""The built-in class lists: the file stems under classes/ (a source's list is one file
there; its source module maps its dataset names to them)."""
COMMENT_PREFIX = "#"
NUMBERED_LINE = re.compile(r"^(?P<number>\d+)\s+(?P<name>\S.*)$")
CLASS_FILE_FORM = (
    "one class name per line in the classifier's output order ('#' lines and blank lines "
    "are skipped; 'N name' lines numbered from 0 or 1 are accepted)"
)


def published_class_names(name: str) -> tuple[str, ...]:
    """The class names of the built-in list `name` (one of CLASS_LISTS), in label order;
    ConfigError naming the known lists when there is no such list."""
    if name not in CLASS_LISTS:
        raise ConfigError(
            f"unknown class list {name!r}; the built-in lists are: {', '.join(CLASS_LISTS)}"
        )
    return _read_built_in(name)


@cache
def _read_built_in(name: str) -> tuple[str, ...]:
    """The names of classes/<name>.txt (read once)."""
    path = CLASSES_FOLDER / f"{name}.txt"
    text = path.read_text(encoding="utf-8")
    return tuple(class_name for _, class_name in _name_lines(text))


def read_class_file(path: str | Path) -> tuple[str, ...]:
    """The class names of a user's class file (the form is in the module docstring);
    ConfigError naming the file and the fix when it is missing, unreadable, empty or names
    a class twice."""
    path = Path(path)
    if not path.is_file():
        what = "is a folder" if path.is_dir() else "does not exist"
        raise ConfigError(
            f"class file {path} {what}; give --classes a file with {CLASS_FILE_FORM}, or a "
            f"built-in list: {', '.join(CLASS_LISTS)}"
        )
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(
            f"class file {path} cannot be read as UTF-8 text ({error}); save it as UTF-8 "
            f"with {CLASS_FILE_FORM}"
        ) from error
    lines = _name_lines(text)
    if not lines:
        raise ConfigError(f"class file {path} names no class; write {CLASS_FILE_FORM}")
    lines = _without_numbers(lines, path)
    first_line_of: dict[str, int] = {}
    for line_number, name in lines:
        if name in first_line_of:
            raise ConfigError(
                f"{path}:{line_number}: class {name!r} is named twice (first on line "
                f"{first_line_of[name]}); each output needs its own class: remove or rename "
                "one of them"
            )
        first_line_of[name] = line_number
    return tuple(name for _, name in lines)


def _name_lines(text: str) -> list[tuple[int, str]]:
    """(1-based line number, stripped text) of the lines that are not blank or comments."""
    lines = []
    for line_number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith(COMMENT_PREFIX):
            lines.append((line_number, stripped))
    return lines


def _without_numbers(lines: list[tuple[int, str]], path: Path) -> list[tuple[int, str]]:
    """The lines with their "N " prefixes dropped when every line is numbered; ConfigError
    when they are numbered but the numbers do not count up from 0 or 1."""
    matches = [NUMBERED_LINE.match(text) for _, text in lines]
    if not all(matches):
        return lines
    first = int(matches[0]["number"])
    if first not in (0, 1):
        raise ConfigError(
            f"{path}:{lines[0][0]}: numbered class lines must start at 0 or 1, not {first}; "
            "number the lines 0, 1, 2, ... (or 1, 2, 3, ...) in output order, or drop the "
            "numbers"
        )
    numbered = list(zip(lines, matches, strict=True))
    for expected, ((line_number, text), match) in enumerate(numbered, start=first):
        if int(match["number"]) != expected:
            raise ConfigError(
                f"{path}:{line_number}: {text!r} is numbered {match['number']}, expected "
                f"{expected}; number the lines in output order without gaps, or drop the "
                "numbers"
            )
    return [(line_number, match["name"].strip()) for (line_number, _), match in numbered]


def resolve_class_names(name_or_file: str, expected_count: int | None = None) -> tuple[str, ...]:
    """The class names `name_or_file` gives: a built-in list (CLASS_LISTS) or a class file.

    A value naming a built-in list is that list even if a file of that name exists (write
    ./NAME for the file). With `expected_count` (the classifier's outputs), ConfigError when
    the list has another number of names.
    """
    if name_or_file in CLASS_LISTS:
        names = published_class_names(name_or_file)
    elif Path(name_or_file).exists():
        names = read_class_file(name_or_file)
    else:
        raise ConfigError(
            f"--classes {name_or_file!r} is neither a built-in class list "
            f"({', '.join(CLASS_LISTS)}) nor an existing file; give one of those names, or "
            f"the path of a file with {CLASS_FILE_FORM}"
        )
    if expected_count is not None and len(names) != expected_count:
        raise ConfigError(
            f"the class list {name_or_file} has {len(names)} names, the classifier has "
            f"{expected_count} outputs; give --classes NAME|FILE with {expected_count} names"
            + _lists_with(expected_count)
        )
    return names


def _lists_with(count: int) -> str:
    """The hint naming the built-in lists with `count` names (or saying there is none)."""
    matching = [name for name in CLASS_LISTS if len(published_class_names(name)) == count]
    if not matching:
        return f" (no built-in list has {count}: write a class file)"
    return f" (built-in lists with {count} names: {', '.join(matching)})"
