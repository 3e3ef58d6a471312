"""Runs a documented journey as a new user would: a page's bash block, command by command,
each `actrec ...` in a fresh process of the installed console script, in a given (empty)
folder. The test appends only the `--set` options that make a training tiny, so the page
and the test cannot drift: a command that does not run as written fails here. The words are
appended to the command that receives them: `actrec launch ... -- actrec train ...`'s worker
command is a `train` (tests/cluster/test_cluster_journey.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from doc_commands import bash_blocks, shell_commands
from repo_paths import REPO_ROOT


@dataclass(frozen=True)
class Step:
    """One command of a journey and what it printed (stdout and stderr, joined)."""

    words: list[str]
    output: str
    seconds: float

    @property
    def said(self) -> str:
        """The output with its line wrapping undone (one space between words)."""
        return " ".join(self.output.split())


def documented_commands(page: str, block: int = 0) -> list[list[str]]:
    """The commands of the `block`-th bash block of docs/`page` (or README.md)."""
    path = REPO_ROOT / page if page == "README.md" else REPO_ROOT / "docs" / page
    return shell_commands(bash_blocks(path.read_text(encoding="utf-8"))[block])


def receiver(words: list[str]) -> str:
    """The subcommand that receives the words after a command's documented ones: "train" for
    `actrec train ...` and for `actrec launch -n 2 -- actrec train ...` (launch hands its
    words after `--` to each worker); "launch" for a launch of another program."""
    if words[1] == "launch" and "--" in words:
        worker = words[words.index("--") + 1 :]
        if len(worker) > 1 and worker[0] == "actrec":
            return worker[1]
    return words[1]


def run_journey(
    commands: list[list[str]],
    folder: Path,
    appended: dict[str, list[str]],
    timeout: int = 600,
    prefix: Sequence[str] = (),
    environment: dict[str, str] | None = None,
) -> list[Step]:
    """Run `commands` in `folder`, one fresh process each, in order; `appended`: the words a
    subcommand (e.g. "train", see `receiver`) gets after the documented ones; `prefix`: words
    that run the console script (e.g. nsenter into a network namespace); `environment`:
    variables added to this process's. AssertionError naming the command and its output on
    the first that fails."""
    executable = shutil.which("actrec")
    assert executable, "the actrec console script is not installed (pip install -e .)"
    environment = {
        **os.environ,
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "COLUMNS": "200",
        **(environment or {}),
    }
    steps = []
    for words in commands:
        assert words[0] == "actrec", f"not an actrec command: {' '.join(words)}"
        arguments = [*words[1:], *appended.get(receiver(words), [])]
        started = time.perf_counter()
        result = subprocess.run(
            [*prefix, executable, *arguments],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=environment,
        )
        output = result.stdout + result.stderr
        assert result.returncode == 0, f"{' '.join(words)} exited {result.returncode}:\n{output}"
        steps.append(Step(words, output, time.perf_counter() - started))
        print(f"{steps[-1].seconds:6.1f} s  {' '.join(words)}")
    return steps


def settings(*values: str) -> list[str]:
    """`--set` words of "section.key=value" settings."""
    return [word for value in values for word in ("--set", value)]
