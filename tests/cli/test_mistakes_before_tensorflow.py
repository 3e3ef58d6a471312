"""Every path an `actrec` command takes, given wrong, is answered before TensorFlow: the
mistakes are derived from the commands' own options (click's parameters), not listed by
hand, so an option added later is covered the day it is added.

For each command, each path parameter gets each mistake of its kind, the other required
parameters the folder of the kind they take:

    input  (a run, an export, prepared data, videos, a file)   a missing path; an empty
                                                               folder; a folder of another
                                                               kind (a prepared folder)
    output (--out, --workdir, --csv, ...)                     a path through a file

and every invocation runs in ONE fresh interpreter where importing TensorFlow or Keras
raises (and is recorded): each must exit != 0 with one line (click's usage error, or
`error: ...`), no traceback, and no attempt to import them."""

from __future__ import annotations

import json
import subprocess
import sys

import click
from actrec_cli.main import main
from stub_folders import stub_folders

OUTPUTS = {
    ("export", "out_dir"), ("eval", "out_dir"), ("migrate", "out"), ("prepare", "out_dir"),
    ("pretrained convert", "out"), ("train", "run_dir"), ("inspect", "contact_sheet"),
    ("predict", "csv_path"), ("predict", "annotate"), ("quickstart", "workdir"),
    ("synthetic", "root"),
}  # fmt: skip
"""(command, parameter) of the path parameters a command writes to."""
KIND_OF_INPUT = {
    "run_dir": "run", "other_run": "run", "fuse": "run", "init_from": "run",
    "distill_from": "run", "model_dir": "export", "prepared": "prepared", "data_dir": "prepared",
    "calibration_data": "prepared", "root": "raw", "checkpoint": "checkpoint.pth",
    "file": "checkpoint.pth", "annotations": "empty", "videos": "raw/jump/v1.avi",
}  # fmt: skip
"""What a right value of each input parameter is here (a folder or file of `folders`): the
value the other parameters get while one is given wrong."""
REQUIRED_VALUES = {("prepare", "dataset"): "folder", ("launch", "num_workers"): "2"}

_RUNNER = """
import importlib.abc, json, sys
from click.testing import CliRunner

attempts = []

class Refused(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "keras"):
            attempts.append(name)
            raise ImportError(f"{name} is refused in this test")
        return None

sys.meta_path.insert(0, Refused())
from actrec_cli.main import main

answers = []
for arguments in json.loads(sys.argv[1]):
    del attempts[:]
    result = CliRunner().invoke(main, arguments)
    answers.append({
        "exit_code": result.exit_code,
        "output": result.stdout + result.stderr,
        "exception": None if isinstance(result.exception, SystemExit) else repr(result.exception),
        "imports": sorted(set(attempts)),
    })
print(json.dumps(answers))
"""


def leaf_commands(command: click.Command = main, words=()) -> list[tuple[str, click.Command]]:
    """(name words, command) of every runnable command."""
    if isinstance(command, click.Group):
        return [
            leaf
            for name in command.list_commands(None)
            for leaf in leaf_commands(command.get_command(None, name), (*words, name))
        ]
    return [(" ".join(words), command)]


def _words(parameter: click.Parameter, value: str) -> list[str]:
    if isinstance(parameter, click.Argument):
        return [value]
    return [parameter.opts[0], value]


def _right_value(name: str, parameter: click.Parameter) -> str:
    if (name, parameter.name) in OUTPUTS:
        return f"new-{parameter.name}"
    return REQUIRED_VALUES.get((name, parameter.name), KIND_OF_INPUT.get(parameter.name, "x"))


def _is_path(parameter: click.Parameter) -> bool:
    return isinstance(parameter.type, click.Path) or parameter.name == "videos"


def mistaken_invocations() -> list[list[str]]:
    """Every command with one path parameter given wrong (see the module)."""
    invocations = []
    for name, command in leaf_commands():
        if name in ("launch", "quickstart", "synthetic"):
            # launch's paths are its worker command's; quickstart and synthetic write
            # their one path (a missing one is theirs to make), tested by their own tests
            continue
        for wrong in [p for p in command.params if _is_path(p)]:
            mistakes = (
                ["new-folder-under/recipe.yaml/x"]
                if (name, wrong.name) in OUTPUTS
                else ["missing/nowhere", "empty", "prepared"]
            )
            for mistake in mistakes:
                if mistake == KIND_OF_INPUT.get(wrong.name):
                    continue
                words = name.split()
                for parameter in command.params:
                    if parameter is wrong:
                        words += _words(parameter, mistake.replace("new-folder-under/", "run/"))
                    elif parameter.required:
                        words += _words(parameter, _right_value(name, parameter))
                invocations.append(words)
    return invocations


def test_every_path_mistake_is_answered_before_tensorflow(tmp_path):
    folders = stub_folders(tmp_path, ("checkpoint.pth",))
    before = sorted(str(path.relative_to(folders)) for path in folders.rglob("*"))
    invocations = mistaken_invocations()
    assert len(invocations) >= 50  # the commands' path parameters were found
    output = subprocess.run(
        [sys.executable, "-c", _RUNNER, json.dumps(invocations)],
        capture_output=True, text=True, check=True, cwd=folders,
    ).stdout  # fmt: skip
    failures = []
    for words, reply in zip(invocations, json.loads(output.splitlines()[-1]), strict=True):
        lines = [line for line in reply["output"].splitlines() if line.strip()]
        one_line = len(lines) == 1 and lines[0].startswith("error: ")
        usage = reply["exit_code"] == 2 and "Error: " in reply["output"]
        if (
            reply["exit_code"] in (0, None)
            or reply["exception"] is not None
            or reply["imports"]
            or "Traceback" in reply["output"]
            or not (one_line or usage)
        ):
            failures.append(f"actrec {' '.join(words)}: {reply}")
    assert not failures, "\n".join(failures)
    assert sorted(str(path.relative_to(folders)) for path in folders.rglob("*")) == before
