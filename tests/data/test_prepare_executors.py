"""The preparation-executor registry (actrec.data.prepare.executors) and the one in-flight
loop both executors share (actrec.data.prepare.in_flight). The executors' own behaviour is
tests/data/test_prepare.py's (local) and tests/data/test_prepare_ray.py's (Ray)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from actrec.data.prepare.executors.registry import (
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
        self.in_flight, self.most_in_flight, self.submitted = 0, 0, []
        self.fail_on, self.lose_window_on = fail_on, lose_window_on

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
    results = results_in_order(range(20), recorder.submit, recorder.collect, limit=3)
    with pytest.raises(ValueError, match="task 4 failed"):
        list(results)
    assert recorder.submitted == list(range(7))  # nothing submitted past the window


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
