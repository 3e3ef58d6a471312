"""The suite reports its time in every run's summary and warns past CI's budget; its tests
start in the order tests/suite_schedule.py gives them, the modules longest first by the
measured tests/durations.json (rewritten by --store-durations)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from fixtures.built_once import built_once
from repo_paths import REPO_ROOT
from suite_budget import budget_summary
from suite_durations import (
    DurationRecorder,
    ModuleDurations,
    merged_durations,
    read_durations,
    write_durations,
)
from suite_schedule import schedule


@pytest.mark.parametrize(("avx512", "budget"), [(False, 25.0), (True, 10.7)])
def test_the_summary_gives_the_suite_time_and_warns_only_past_the_cpu_s_budget(avx512, budget):
    cpu = "with" if avx512 else "without"
    assert budget_summary((budget - 1) * 60, avx512) == (
        f"actrec suite: {budget - 1:.1f} min (budget {budget:.1f} min on a CPU {cpu} AVX-512)",
        None,
    )
    _, warning = budget_summary((budget + 1) * 60, avx512)
    assert warning.startswith(
        f"WARNING: the suite took {budget + 1:.1f} min, more than the {budget:.1f} minutes"
    )
    assert "benchmarks/suite_versions.py" in warning  # instances differ


class Item:
    def __init__(self, name, fixturenames, module="test_a"):
        self.name, self.fixturenames, self.markers = name, fixturenames, []
        self.path = Path(f"tests/{module}.py")
        self.nodeid = f"tests/{module}.py::{name}"

    def add_marker(self, marker):
        self.markers.append(marker)

    def get_closest_marker(self, name):
        return next((marker for marker in self.markers if marker.name == name), None)


def test_synthetic_set_tests_go_first_in_two_groups_the_others_by_module_longest_first():
    durations = ModuleDurations({"tests/long1.py": 300.0, "tests/long2.py": 90.0}, 5.0)
    items = [
        Item("fast", ["tmp_path"]),
        Item("readme", ["synthetic_flow_run", "synthetic_tsm_online_run"], "test_b"),
        Item("fusion", ["synthetic_tsm_run", "tmp_path"], "test_b"),
        Item("tiny", ["tiny_runs"], "test_b"),
        Item("online", ["synthetic_tsm_online_run", "synthetic_prepared"]),
        Item("accuracy", ["synthetic_prepared"]),
        Item("long 2", ["tmp_path"], "long2"),
        Item("long 1a", ["tmp_path"], "long1"),
        Item("long 1b", ["tmp_path"], "long1"),
    ]
    schedule(items, durations)
    # the second group is what needs its online TSM and no run of the first group's; a test
    # needing both ends the first group; the other modules follow, the longest first, each
    # module's tests in file order, the modules the file lacks (its default) in file order
    assert [item.name for item in items] == [
        "fusion",
        "accuracy",
        "readme",
        "online",
        "long 1a",
        "long 1b",
        "long 2",
        "fast",
        "tiny",
    ]
    groups = {
        item.name: [m.args for m in item.markers if m.name == "xdist_group"] for item in items
    }
    assert groups == {
        "fusion": [("synthetic-set-1",)],
        "accuracy": [("synthetic-set-1",)],
        "readme": [("synthetic-set-1",)],
        "online": [("synthetic-set-2",)],
        "long 1a": [("long1",)],
        "long 1b": [("long1",)],
        "long 2": [("long2",)],
        "fast": [("test_a",)],
        "tiny": [("test_b",)],
    }
    # the synthetic-set groups' tests, and only they, are the recipe-scale ones
    recipe_scale = [item.name for item in items if item.get_closest_marker("recipe_scale")]
    assert recipe_scale == ["fusion", "accuracy", "readme", "online"]


def test_a_module_missing_from_the_durations_gets_the_default_between_the_measured():
    durations = ModuleDurations({"tests/long.py": 300.0, "tests/short.py": 1.0}, 5.0)
    items = [Item("s", [], "short"), Item("new", [], "new"), Item("l", [], "long")]
    schedule(items, durations)
    assert [item.name for item in items] == ["l", "new", "s"]


@dataclass
class Report:
    nodeid: str
    duration: float


def test_store_durations_sums_each_module_s_phases_outside_the_synthetic_set_groups(tmp_path):
    for module in ("tests/a/test_x.py", "tests/a/test_y.py", "tests/a/test_gone.py"):
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).touch()
    path = tmp_path / "durations.json"
    previous = ModuleDurations({"tests/a/test_y.py": 7.0, "tests/a/test_removed.py": 9.0}, 7.0)
    write_durations(previous, path)
    recorder = DurationRecorder(path, root=tmp_path)
    # as pytest-xdist reports them: "@group" after the test id
    for nodeid, seconds in [
        ("tests/a/test_x.py::test_one@test_x", 1.5),
        ("tests/a/test_x.py::test_two[a@b]@test_x", 2.0),
        ("tests/a/test_x.py::test_trains@synthetic-set-1", 200.0),
        ("tests/a/test_gone.py::test_it@test_gone", 4.0),
    ]:
        recorder.pytest_runtest_logreport(Report(nodeid, seconds))
    recorder.pytest_sessionfinish(None, exitstatus=1)
    stored = read_durations(path)
    assert stored.seconds == {
        "tests/a/test_x.py": 3.5,
        "tests/a/test_y.py": 7.0,  # not run: kept
        "tests/a/test_gone.py": 4.0,
    }  # tests/a/test_removed.py: no such file any more
    assert stored.default_seconds == 4.0  # the median
    assert "AVX-512" in stored.measured
    assert list(json.loads(path.read_text())["modules"]) == [
        "tests/a/test_y.py",
        "tests/a/test_gone.py",
        "tests/a/test_x.py",
    ]  # longest first

    interrupted = DurationRecorder(path, root=tmp_path)
    interrupted.pytest_runtest_logreport(Report("tests/a/test_y.py::test_it@test_y", 0.5))
    interrupted.pytest_sessionfinish(None, exitstatus=2)
    assert read_durations(path) == stored


def test_merged_durations_default_to_the_median_module():
    merged = merged_durations(
        ModuleDurations({}, 0.0), {"tests/suite/test_suite_budget.py": 2.0}, "now", REPO_ROOT
    )
    assert merged == ModuleDurations({"tests/suite/test_suite_budget.py": 2.0}, 2.0, "now")


def test_every_module_the_durations_start_early_exists_and_pytest_keeps_the_order_given():
    """A renamed long module would silently lose its early start (a short one only keeps a
    stale line until the next --store-durations drops it); pytest-xdist's default
    reordering (by number of tests) would undo the order."""
    durations = read_durations()
    assert durations.seconds and durations.default_seconds > 0
    for module, seconds in durations.seconds.items():
        assert seconds <= durations.default_seconds or (REPO_ROOT / module).is_file(), module
    pyproject = (REPO_ROOT / "pyproject.toml").read_text()
    assert "--dist loadgroup --no-loadscope-reorder" in pyproject


def test_a_fixture_built_once_is_built_by_one_caller_and_read_by_the_next(tmp_path_factory):
    calls = []

    def build(folder):
        calls.append(folder)
        folder.mkdir(parents=True)
        return {"folder": folder, "value": len(calls)}

    first = built_once(tmp_path_factory, "once-test", build)
    second = built_once(tmp_path_factory, "once-test", build)
    assert first == second == {"folder": calls[0], "value": 1} and len(calls) == 1

    def failing(folder):
        raise RuntimeError("broken build")

    with pytest.raises(RuntimeError, match="broken build"):
        built_once(tmp_path_factory, "once-failing", failing)
    assert built_once(tmp_path_factory, "once-failing", build)["value"] == 2
