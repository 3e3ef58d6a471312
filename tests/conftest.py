"""The suite's hooks: the process settings every test inherits, the fixture modules
(tests/fixtures/), the order and xdist groups of the tests (suite_schedule.py, from the
measured tests/durations.json), `--store-durations` (suite_durations.py) and the time
budget in the summary (suite_budget.py). Tests import helpers by module name
(tiny_videos, doc_commands, ...: tests/ is on sys.path, pytest puts the folder of this
file there) and ask for fixtures by argument name."""

from __future__ import annotations

import os
import time

# One thread per TensorFlow op (both pytest-xdist workers, and the worker processes tests
# launch, inherit it): the suite runs two to four TensorFlow processes on 2 cores, and
# TensorFlow's default (a thread per core in each) oversubscribes them. The suite took
# 17 min 14 s with it and 19 min 7 s without (2-core AMD EPYC; docs/benchmarks.md, "The
# test suite's time"). Set before TensorFlow is imported; a caller's value wins
# (TF_NUM_INTRAOP_THREADS=0: TensorFlow's default).
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")

import actrec  # noqa: F401  (first: its TensorFlow settings apply before any test imports TF)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest
from suite_budget import budget_summary, has_avx512
from suite_durations import DurationRecorder, read_durations
from suite_garbage import settle_garbage_collection
from suite_schedule import schedule

pytest_plugins = ["fixtures.cli", "fixtures.synthetic_runs", "fixtures.tiny_runs"]

_SESSION_START = time.monotonic()


def pytest_addoption(parser):
    parser.addoption(
        "--store-durations",
        action="store_true",
        help="rewrite tests/durations.json (the order the modules start in) with the "
        "seconds each module's tests took in this run (docs/development.md)",
    )


def pytest_configure(config):
    # in the process that reports (not on the xdist workers, which have workerinput)
    if config.getoption("store_durations") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(DurationRecorder(), "actrec-store-durations")


def pytest_collection_finish(session):
    # after the test modules' imports (PyTorch, JAX, ...), so that they are frozen too
    if not _hands_tests_to_workers(session.config):  # the process that runs the tests
        settle_garbage_collection()


def _hands_tests_to_workers(config) -> bool:
    """Whether this process is pytest-xdist's controller (it runs no test)."""
    return not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", 0))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups from the markers
def pytest_collection_modifyitems(config, items):
    schedule(items, read_durations())


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    line, warning = budget_summary(time.monotonic() - _SESSION_START, has_avx512())
    terminalreporter.write_line(line)
    if warning:
        terminalreporter.write_line(warning, yellow=True, bold=True)
