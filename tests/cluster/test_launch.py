"""actrec.cluster.launch and `actrec launch`: real worker processes
(tests/cluster/workers/behave.py)."""

from __future__ import annotations

import io
import json
import os
import sys
import time
from pathlib import Path

import pytest

from actrec.cluster.launch import (
    free_ports,
    launch_local_workers,
    run_local_workers,
    worker_environments,
    worker_tf_configs,
)
from actrec.errors import ConfigError

BEHAVE = str(Path(__file__).resolve().parent / "workers" / "behave.py")


def behave(*arguments: str) -> list[str]:
    return [sys.executable, BEHAVE, *arguments]


def lines_of(text: str, worker: int) -> list[str]:
    prefix = f"[worker {worker}] "
    return [line[len(prefix) :] for line in text.splitlines() if line.startswith(prefix)]


def reported(text: str, worker: int, key: str) -> str:
    return next(line.split(" ", 1)[1] for line in lines_of(text, worker) if line.startswith(key))


def test_each_worker_gets_its_own_tf_config_over_distinct_free_ports():
    output = io.StringIO()
    assert launch_local_workers(3, behave(), output=output, timeout=60) == 0
    text = output.getvalue()
    configs = [json.loads(reported(text, worker, "tf_config")) for worker in range(3)]
    addresses = configs[0]["cluster"]["worker"]
    assert len(set(addresses)) == 3
    assert all(address.startswith("localhost:") for address in addresses)
    for index, config in enumerate(configs):
        assert config == {
            "cluster": {"worker": addresses},
            "task": {"type": "worker", "index": index},
        }


def test_base_port_gives_consecutive_ports():
    base = free_ports(1)[0]
    output = io.StringIO()
    assert launch_local_workers(2, behave(), base_port=base, output=output, timeout=60) == 0
    config = json.loads(reported(output.getvalue(), 1, "tf_config"))
    assert config["cluster"]["worker"] == [f"localhost:{base}", f"localhost:{base + 1}"]


def test_every_output_line_is_prefixed_with_its_worker():
    output = io.StringIO()
    assert launch_local_workers(2, behave("--lines", "5"), output=output, timeout=60) == 0
    lines = output.getvalue().splitlines()
    assert all(line.startswith(("[worker 0] ", "[worker 1] ")) for line in lines)
    for worker in range(2):
        numbered = [line for line in lines_of(output.getvalue(), worker) if line.startswith("line")]
        assert numbered == [f"line {index}" for index in range(5)]


def test_a_failing_worker_stops_the_others_and_its_code_is_returned():
    output = io.StringIO()
    exits = []
    started = time.monotonic()
    result = run_local_workers(
        2,
        behave("--fail", "1", "3", "--sleep-worker", "0", "60"),
        output=output,
        timeout=120,
        grace_period=5,
        on_worker_exit=exits.append,
    )
    assert time.monotonic() - started < 30
    assert result.exit_code == 3 and result.failed_worker == 1 and not result.timed_out
    assert [
        (worker.index, worker.exit_code, worker.stopped_by_launcher) for worker in result.workers
    ] == [(1, 3, False), (0, 143, True)]
    assert exits == list(result.workers)
    assert "failing on purpose" in lines_of(output.getvalue(), 1)


def test_timeout_stops_every_worker():
    started = time.monotonic()
    result = run_local_workers(
        2, behave("--sleep", "60"), output=io.StringIO(), timeout=1.0, grace_period=5
    )
    assert time.monotonic() - started < 20
    assert result.exit_code == 124 and result.timed_out and result.failed_worker is None
    assert {worker.exit_code for worker in result.workers} == {143}


def test_a_worker_ignoring_sigterm_is_killed_after_the_grace_period():
    started = time.monotonic()
    result = run_local_workers(
        2,
        behave("--sleep", "60", "--ignore-sigterm"),
        output=io.StringIO(),
        timeout=3.0,  # time for the workers to install SIG_IGN
        grace_period=1.0,
    )
    assert time.monotonic() - started < 20
    assert result.exit_code == 124
    assert {worker.exit_code for worker in result.workers} == {137}  # 128 + SIGKILL


class InterruptOnceBothPidsArePrinted(io.StringIO):
    """An output stream that raises KeyboardInterrupt (once) when both workers run."""

    def __init__(self):
        super().__init__()
        self.interrupted = False

    def write(self, text: str) -> int:
        written = super().write(text)
        both_started = all(f"[worker {index}] pid" in self.getvalue() for index in (0, 1))
        if both_started and not self.interrupted:
            self.interrupted = True
            raise KeyboardInterrupt
        return written


def test_interrupt_stops_the_workers_and_propagates():
    output = InterruptOnceBothPidsArePrinted()
    with pytest.raises(KeyboardInterrupt):
        run_local_workers(2, behave("--sleep", "60"), output=output, timeout=60, grace_period=2)
    for worker in (0, 1):
        with pytest.raises(ProcessLookupError):
            os.kill(int(reported(output.getvalue(), worker, "pid")), 0)


def test_gpus_are_assigned_one_per_worker_when_present():
    ports = [1111, 2222]
    with_gpus = worker_environments(2, ports, {"CUDA_VISIBLE_DEVICES": "3,5", "A": "b"})
    assert [environment["CUDA_VISIBLE_DEVICES"] for environment in with_gpus] == ["3", "5"]
    assert all(environment["A"] == "b" for environment in with_gpus)
    without_gpus = worker_environments(2, ports, {"CUDA_VISIBLE_DEVICES": ""})
    assert [environment["CUDA_VISIBLE_DEVICES"] for environment in without_gpus] == ["", ""]
    assert json.loads(with_gpus[1]["TF_CONFIG"]) == worker_tf_configs(ports)[1]


def test_invalid_arguments_are_config_errors():
    with pytest.raises(ConfigError, match="number of workers"):
        launch_local_workers(0, behave())
    with pytest.raises(ConfigError, match="after `--`"):
        launch_local_workers(2, [])
    with pytest.raises(ConfigError, match="cannot start the worker command"):
        launch_local_workers(1, ["/nonexistent/actrec-worker"], output=io.StringIO())


def test_cli_launch_runs_the_command_and_returns_the_failure_code(cli_runner):
    result = cli_runner(
        "launch",
        "-n",
        "2",
        "--timeout",
        "60",
        "--grace-period",
        "2",
        "--",
        *behave("--fail", "0", "4", "--sleep-worker", "1", "60"),
    )
    assert result.exit_code == 4
    assert "[worker 0] failing on purpose" in result.output
    success = cli_runner("launch", "-n", "2", "--", *behave())
    assert success.exit_code == 0
    assert "[worker 1] tf_config" in success.output
