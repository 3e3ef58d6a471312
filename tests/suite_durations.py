"""tests/durations.json: the seconds each test module's tests take outside the
synthetic-set groups, which tests/suite_schedule.py orders the modules by (longest first).

`python -m pytest --store-durations` (the README's test command plus that option) rewrites
the figures of the modules it ran from the phases' durations (setup, call and teardown of
each test, as `--durations` sums them) and keeps those of the modules it did not run; a
module missing from the file gets the file's `default_seconds` (the median module's)."""

from __future__ import annotations

import json
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from repo_paths import REPO_ROOT
from suite_budget import has_avx512

DURATIONS_FILE = REPO_ROOT / "tests" / "durations.json"
ABOUT = (
    "Seconds of each test module's tests outside the synthetic-set groups (setup + call + "
    "teardown), which tests/suite_schedule.py starts longest first; rewritten by "
    "`python -m pytest --store-durations` (docs/development.md)."
)


@dataclass(frozen=True)
class ModuleDurations:
    """Module path relative to the checkout (tests/x/test_y.py) -> seconds, and the figure
    a module missing there gets."""

    seconds: dict[str, float]
    default_seconds: float
    measured: str = ""

    def of(self, module: str) -> float:
        """The module's seconds, or the default for a module the file does not hold."""
        return self.seconds.get(module, self.default_seconds)


def read_durations(path: Path = DURATIONS_FILE) -> ModuleDurations:
    """The stored durations (no file: every module gets 0 s and keeps its file order)."""
    if not path.is_file():
        return ModuleDurations({}, 0.0)
    stored = json.loads(path.read_text())
    return ModuleDurations(
        {module: float(seconds) for module, seconds in stored["modules"].items()},
        float(stored["default_seconds"]),
        stored.get("measured", ""),
    )


def merged_durations(
    previous: ModuleDurations, measured: dict[str, float], measured_on: str, root: Path
) -> ModuleDurations:
    """The measured modules' figures over the previous ones, without modules whose file is
    gone from `root`; the default is the median figure."""
    seconds = {
        module: figure
        for module, figure in {**previous.seconds, **measured}.items()
        if (root / module).is_file()
    }
    default = statistics.median(seconds.values()) if seconds else 0.0
    return ModuleDurations(seconds, round(default, 1), measured_on)


def write_durations(durations: ModuleDurations, path: Path = DURATIONS_FILE) -> None:
    """The file, the longest module first, figures to a tenth of a second."""
    ordered = sorted(durations.seconds.items(), key=lambda pair: (-pair[1], pair[0]))
    text = {
        "about": ABOUT,
        "measured": durations.measured,
        "default_seconds": durations.default_seconds,
        "modules": {module: round(seconds, 1) for module, seconds in ordered},
    }
    path.write_text(json.dumps(text, indent=2) + "\n")


def module_of(nodeid: str) -> str:
    """tests/x/test_y.py of "tests/x/test_y.py::test_z[p]@group"."""
    return nodeid.split("::")[0]


def group_of(nodeid: str, collected_groups: dict[str, str]) -> str:
    """A test's xdist group: from the collection of this process (`-n 0`), else from the
    "@group" pytest-xdist appends to the test ids it reports (`--dist loadgroup`)."""
    if nodeid in collected_groups:
        return collected_groups[nodeid]
    return nodeid.rpartition("@")[2] if "@" in nodeid else ""


class DurationRecorder:
    """A pytest plugin (registered by tests/conftest.py for `--store-durations`, in the
    process that reports: the xdist controller, or the only one with `-n 0`): sums the
    phases of each module's tests outside the synthetic-set groups and writes the file
    when the session ends, unless it was interrupted."""

    def __init__(self, path: Path = DURATIONS_FILE, root: Path = REPO_ROOT):
        self.path, self.root = path, root
        self.collected_groups: dict[str, str] = {}
        self.seconds: dict[str, float] = {}

    def pytest_collection_modifyitems(self, items) -> None:
        for item in items:
            marker = item.get_closest_marker("xdist_group")
            if marker is not None:
                self.collected_groups[item.nodeid] = marker.args[0]

    def pytest_runtest_logreport(self, report) -> None:
        if group_of(report.nodeid, self.collected_groups).startswith("synthetic-set"):
            return
        module = module_of(report.nodeid)
        self.seconds[module] = self.seconds.get(module, 0.0) + report.duration

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        if exitstatus not in (0, 1) or not self.seconds:  # 1: some tests failed
            return
        measured_on = f"{time.strftime('%Y-%m-%d')}, {cpu_description()}"
        merged = merged_durations(read_durations(self.path), self.seconds, measured_on, self.root)
        write_durations(merged, self.path)


def cpu_description() -> str:
    """ "N cores, CPU with/without AVX-512" of this machine."""
    kind = "with" if has_avx512() else "without"
    return f"{os.cpu_count()} cores, CPU {kind} AVX-512"
