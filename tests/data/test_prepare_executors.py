"""The preparation-executor registry (actrec.data.prepare.executors) and the one in-flight
loop both executors share (actrec.data.prepare.in_flight). The executors' own behaviour is
tests/data/test_prepare.py's (local) and tests/data/test_prepare_ray.py's (Ray)."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from actrec.data.prepare.executors.registry import (
    ExecutorKind,
    ExecutorOption,
    checked_options,
    executor_kind,
    executor_names,
)
from actrec.data.prepare.in_flight import WindowLostError, results_in_order
from actrec.errors import ConfigError


def test_the_cli_offers_the_registry_s_executors_and_their_options():
    from actrec_cli.prepare import prepare

    parameters = {parameter.name: parameter for parameter in prepare.params}
    assert tuple(parameters["executor"].type.choices) == executor_names() == ("local", "ray")
    for name in executor_names():
        kind = executor_kind(name)
        assert kind.name == name and kind.summary and callable(kind.open)
        for option in kind.options:
            assert option.name in parameters, (name, option.name)
            assert f"With --executor {name}" in parameters[option.name].help


@pytest.mark.parametrize("name", executor_names())
def test_every_executor_module_provides_the_contract(name):
    kind = importlib.import_module(f"actrec.data.prepare.executors.{name}").EXECUTOR
    assert isinstance(kind, ExecutorKind) and kind.name == name
    assert kind.summary and "\n" not in kind.summary  # one line: --executor's help
    assert all(isinstance(option, ExecutorOption) and option.help for option in kind.options)
    opener = inspect.unwrap(kind.open)
    parameters = inspect.signature(opener).parameters
    assert next(iter(parameters)) == "workers", name
    for option in kind.options:  # passed by name, None when not given
        assert parameters[option.name].default is None, (name, option.name)
    # What `open` yields (its annotation, Iterator[AnExecutor]) has the Executor's methods,
    # checked without starting it (a Ray would start).
    (executor_class,) = typing.get_args(typing.get_type_hints(opener)["return"])
    for method in ("check_nodes", "encode_in_order"):
        assert callable(getattr(executor_class, method, None)), (name, method)


def test_docs_cluster_lists_every_executor_and_its_options():
    page = (Path(__file__).parents[2] / "docs" / "cluster.md").read_text(encoding="utf-8")
    table = page.split("| `--executor` | where videos are encoded | its options |", 1)[1]
    rows = {}
    for line in table.splitlines()[2:]:
        if not line.startswith("| `"):
            break
        rows[line.split("`")[1]] = line
    assert tuple(rows) == executor_names()
    for name in executor_names():
        for option in executor_kind(name).options:
            assert f"`--{option.name}" in rows[name], (name, option.name)


def test_reading_the_registry_imports_neither_opencv_nor_ray_nor_tensorflow():
    code = (
        "import sys\n"
        "from actrec.data.prepare.executors.registry import all_options, executor_names\n"
        "all_options()\n"
        "print(sorted(m for m in ('cv2', 'ray', 'tensorflow') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_an_option_of_another_executor_is_refused_by_name():
    assert checked_options("ray", {"address": "auto"}) == {"address": "auto"}
    assert checked_options("local", {"address": None}) == {}
    with pytest.raises(ConfigError, match=r"--address is an option of --executor ray; "
                       r"--executor local does not take it: leave --address out"):  # fmt: skip
        checked_options("local", {"address": "head:6379"})
    with pytest.raises(ConfigError, match=r"executor 'dask' is not valid; choose one of: "):
        executor_kind("dask")


class Recorder:
    """Plain-Python submit / collect for the loop: records how many tasks are in flight."""

    def __init__(self, fail_on=None, lose_window_on=None):
        self.in_flight, self.most_in_flight, self.submitted, self.cancelled = 0, 0, [], []
        self.fail_on, self.lose_window_on = fail_on, lose_window_on

    def cancel(self, handle):
        self.cancelled.append(handle)

    def submit(self, task):
        self.submitted.append(task)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        return task * 10

    def collect(self, task, handle):
        self.in_flight -= 1
        if task == self.fail_on:
            raise ValueError(f"task {task} failed")
        if task == self.lose_window_on:
            self.lose_window_on = None  # lost once
            self.in_flight = 0  # the pool's in-flight work is gone with it
            raise WindowLostError
        return handle


def test_the_loop_keeps_task_order_and_at_most_limit_in_flight():
    recorder = Recorder()
    results = list(results_in_order(range(20), recorder.submit, recorder.collect, limit=3))
    assert results == [task * 10 for task in range(20)]
    assert recorder.most_in_flight == 3


def test_a_task_s_error_stops_the_loop():
    recorder = Recorder(fail_on=4)
    results = results_in_order(
        range(20), recorder.submit, recorder.collect, limit=3, cancel=recorder.cancel
    )
    with pytest.raises(ValueError, match="task 4 failed"):
        list(results)
    assert recorder.submitted == list(range(7))  # nothing submitted past the window
    assert recorder.cancelled == [50, 60]  # the rest of the window, before the error
    uncancellable = Recorder(fail_on=0)  # without `cancel` the error still comes through
    with pytest.raises(ValueError, match="task 0 failed"):
        list(results_in_order(range(3), uncancellable.submit, uncancellable.collect, limit=2))


def test_a_failing_submit_cancels_what_is_in_flight():
    recorder = Recorder()

    def submit(task):
        if task == 2:
            raise OSError("cannot submit task 2")
        return recorder.submit(task)

    results = results_in_order(range(5), submit, recorder.collect, limit=4, cancel=recorder.cancel)
    with pytest.raises(OSError, match="cannot submit task 2"):
        list(results)
    assert recorder.cancelled == [0, 10]


def test_a_lost_window_is_submitted_again_and_its_oldest_task_recovered_alone():
    recorder = Recorder(lose_window_on=5)
    recovered = []

    def recover(task):
        recovered.append(task)
        return -task

    results = list(
        results_in_order(range(10), recorder.submit, recorder.collect, limit=4, recover=recover)
    )
    assert results == [0, 10, 20, 30, 40, -5, 60, 70, 80, 90]
    assert recovered == [5]
    assert recorder.submitted.count(6) == 2 and recorder.submitted.count(5) == 1
    unrecoverable = Recorder(lose_window_on=5)
    with pytest.raises(WindowLostError):  # an executor that cannot recover
        list(results_in_order([5], unrecoverable.submit, unrecoverable.collect, limit=1))
