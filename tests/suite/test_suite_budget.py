"""The suite reports its time in every run's summary and warns past CI's budget."""

from __future__ import annotations

import time
from pathlib import Path

import conftest
import pytest


class Reporter:
    def __init__(self):
        self.lines = []

    def write_line(self, line, **markup):
        self.lines.append(line)


@pytest.mark.parametrize(("avx512", "budget"), [(False, 25.0), (True, 10.7)])
def test_the_summary_gives_the_suite_time_and_warns_only_past_the_cpu_s_budget(
    monkeypatch, avx512, budget
):
    reporter = Reporter()
    monkeypatch.setattr(conftest, "has_avx512", lambda: avx512)
    cpu = "with" if avx512 else "without"
    monkeypatch.setattr(conftest, "_SESSION_START", time.monotonic() - (budget - 1) * 60)
    conftest.pytest_terminal_summary(reporter, 0, None)
    assert reporter.lines == [
        f"actrec suite: {budget - 1:.1f} min (budget {budget:.1f} min on a CPU {cpu} AVX-512)"
    ]
    monkeypatch.setattr(conftest, "_SESSION_START", time.monotonic() - (budget + 1) * 60)
    conftest.pytest_terminal_summary(reporter, 0, None)
    assert reporter.lines[-1].startswith(
        f"WARNING: the suite took {budget + 1:.1f} min, more than the {budget:.1f} minutes"
    )
    assert "benchmarks/suite_versions.py" in reporter.lines[-1]  # instances differ


class Item:
    def __init__(self, name, fixturenames, module="test_a"):
        self.name, self.fixturenames, self.markers = name, fixturenames, []
        self.path = Path(f"tests/{module}.py")

    def add_marker(self, marker):
        self.markers.append(marker)


def test_synthetic_set_tests_go_first_in_two_groups_the_others_by_module_longest_first():
    longest, second_longest = conftest.LONGEST_MODULES[:2]
    items = [
        Item("fast", ["tmp_path"]),
        Item("readme", ["synthetic_flow_run", "synthetic_tsm_online_run"], "test_b"),
        Item("fusion", ["synthetic_tsm_run", "tmp_path"], "test_b"),
        Item("tiny", ["tiny_runs"], "test_b"),
        Item("online", ["synthetic_tsm_online_run", "synthetic_prepared"]),
        Item("accuracy", ["synthetic_prepared"]),
        Item("long 2", ["tmp_path"], second_longest),
        Item("long 1a", ["tmp_path"], longest),
        Item("long 1b", ["tmp_path"], longest),
    ]
    conftest.pytest_collection_modifyitems(None, items)
    # the second group is what needs its online TSM and no run of the first group's; a test
    # needing both ends the first group; the other modules follow, the longest first, each
    # module's tests in file order
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
        "long 1a": [(longest,)],
        "long 1b": [(longest,)],
        "long 2": [(second_longest,)],
        "fast": [("test_a",)],
        "tiny": [("test_b",)],
    }


def test_the_longest_modules_exist_and_pytest_keeps_the_order_conftest_gives():
    """A renamed module would silently lose its early start; pytest-xdist's default
    reordering (by number of tests) would undo the order."""
    from conftest import REPO_ROOT

    for name in conftest.LONGEST_MODULES:
        assert len(list((REPO_ROOT / "tests").rglob(f"{name}.py"))) == 1, name
    pyproject = (REPO_ROOT / "pyproject.toml").read_text()
    assert "--dist loadgroup --no-loadscope-reorder" in pyproject


def test_a_fixture_built_once_is_built_by_one_caller_and_read_by_the_next(tmp_path_factory):
    calls = []

    def build(folder):
        calls.append(folder)
        folder.mkdir(parents=True)
        return {"folder": folder, "value": len(calls)}

    first = conftest._built_once(tmp_path_factory, "once-test", build)
    second = conftest._built_once(tmp_path_factory, "once-test", build)
    assert first == second == {"folder": calls[0], "value": 1} and len(calls) == 1

    def failing(folder):
        raise RuntimeError("broken build")

    with pytest.raises(RuntimeError, match="broken build"):
        conftest._built_once(tmp_path_factory, "once-failing", failing)
    assert conftest._built_once(tmp_path_factory, "once-failing", build)["value"] == 2
