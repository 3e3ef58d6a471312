"""The suite reports its time in every run's summary and warns past CI's budget."""

from __future__ import annotations

import time
from pathlib import Path

import conftest


class Reporter:
    def __init__(self):
        self.lines = []

    def write_line(self, line, **markup):
        self.lines.append(line)


def test_the_summary_gives_the_suite_time_and_warns_only_past_the_budget(monkeypatch):
    reporter = Reporter()
    monkeypatch.setattr(conftest, "_SESSION_START", time.monotonic() - 29 * 60)
    conftest.pytest_terminal_summary(reporter, 0, None)
    assert reporter.lines == ["actrec suite: 29.0 min"]
    monkeypatch.setattr(conftest, "_SESSION_START", time.monotonic() - 31 * 60)
    conftest.pytest_terminal_summary(reporter, 0, None)
    assert reporter.lines[-1].startswith("WARNING: the suite took 31.0 min, more than the 30")


class Item:
    def __init__(self, name, fixturenames, module="test_a"):
        self.name, self.fixturenames, self.markers = name, fixturenames, []
        self.path = Path(f"tests/{module}.py")

    def add_marker(self, marker):
        self.markers.append(marker)


def test_synthetic_set_tests_go_first_and_to_one_xdist_worker_the_others_by_module():
    items = [
        Item("fast", ["tmp_path"]),
        Item("fusion", ["synthetic_tsm_run", "tmp_path"], "test_b"),
        Item("tiny", ["tiny_runs"], "test_b"),
        Item("accuracy", ["synthetic_prepared"]),
    ]
    conftest.pytest_collection_modifyitems(None, items)
    assert [item.name for item in items] == ["fusion", "accuracy", "fast", "tiny"]
    groups = {
        item.name: [m.args for m in item.markers if m.name == "xdist_group"] for item in items
    }
    assert groups == {
        "fusion": [("synthetic-set",)],
        "accuracy": [("synthetic-set",)],
        "fast": [("test_a",)],
        "tiny": [("test_b",)],
    }
