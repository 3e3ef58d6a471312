"""An earlier commit checked out beside this one, for the `*_versions.py` benchmarks that
time the same command at both on one machine (instances of one CPU kind differ, so only a
ratio measured where both ran carries a figure from one machine to another)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def baseline_checkout(commit: str) -> Iterator[tuple[Path, str]]:
    """(worktree, PYTHONPATH) of `commit` in a temporary git worktree, removed on exit. The
    PYTHONPATH's `actrec` and `actrec_cli` are the worktree's (pyproject.toml installs cli/
    as actrec_cli), so a process started with it imports the baseline, not this checkout."""
    with tempfile.TemporaryDirectory(prefix="actrec-versions-") as scratch:
        worktree, links = Path(scratch) / "baseline", Path(scratch) / "path"
        links.mkdir()
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(worktree), commit],
            cwd=ROOT, check=True, capture_output=True,
        )  # fmt: skip
        try:
            (links / "actrec").symlink_to(worktree / "actrec")
            (links / "actrec_cli").symlink_to(worktree / "cli")
            yield worktree, str(links)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT)


def hooked_environment(folder: Path, modules: dict[str, str], **variables: str) -> dict[str, str]:
    """This process's environment with `folder` first on PYTHONPATH, holding `modules`
    ({file name: source}, e.g. a sitecustomize.py every Python process the command starts
    imports), and `variables` added: for the benchmarks that log inside the suite's
    processes."""
    for name, source in modules.items():
        (folder / name).write_text(source)
    environment = dict(os.environ, **variables)
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(folder)] + ([environment["PYTHONPATH"]] if environment.get("PYTHONPATH") else [])
    )
    return environment
