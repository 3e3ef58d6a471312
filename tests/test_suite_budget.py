"""The suite reports its time in every run's summary and warns past CI's budget."""

from __future__ import annotations

import time

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
    def __init__(self, name, fixturenames):
        self.name, self.fixturenames, self.markers = name, fixturenames, []

    def add_marker(self, marker):
        self.markers.append(marker)


def test_synthetic_set_tests_go_first_and_to_one_xdist_worker():
    items = [
        Item("fast", ["tmp_path"]),
        Item("fusion", ["synthetic_tsm_run", "tmp_path"]),
        Item("tiny", ["tiny_runs"]),
        Item("accuracy", ["synthetic_prepared"]),
    ]
    conftest.pytest_collection_modifyitems(None, items)
    assert [item.name for item in items] == ["fusion", "accuracy", "fast", "tiny"]
    for item in items:
        groups = [m.args for m in item.markers if m.name == "xdist_group"]
        assert groups == ([("synthetic-set",)] if item.name in ("fusion", "accuracy") else [])
