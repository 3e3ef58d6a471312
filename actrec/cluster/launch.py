"""Start N local worker processes of a multi-worker training job, and supervise them.

Each worker gets its own TF_CONFIG (`{"cluster": {"worker": [...]}, "task": {"type":
"worker", "index": i}}` over free localhost ports) and, on a machine with GPUs, its own
GPU (`CUDA_VISIBLE_DEVICES=i`: one process per accelerator). The workers'
output is streamed line by line, prefixed "[worker i] ". When any worker exits non-zero,
when the timeout passes, or on Ctrl-C, the other workers are stopped (SIGTERM to their
process group, SIGKILL after a grace period), so a crashed worker never leaves its peers
waiting forever in a collective.

No TensorFlow here: the launcher stays light and starts in milliseconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TextIO

from actrec.errors import ConfigError

DEFAULT_HOST = "localhost"
DEFAULT_GRACE_PERIOD = 10.0
TIMEOUT_EXIT_CODE = 124
POLL_SECONDS = 0.05
DRAIN_SECONDS = 2.0


@dataclass(frozen=True)
class WorkerExit:
    """How one worker process ended.

    exit_code: its exit status, in shell convention (128 + N when killed by signal N).
    seconds: from the launch to its exit.
    stopped_by_launcher: the launcher terminated it (another worker failed, timeout, Ctrl-C).
    """

    index: int
    exit_code: int
    seconds: float
    stopped_by_launcher: bool


@dataclass(frozen=True)
class LaunchResult:
    """What a launch did.

    exit_code: 0 when every worker succeeded; else the first non-zero exit code of a worker
        that ended on its own, or 124 when the timeout stopped the workers.
    workers: every worker's exit, in the order they ended.
    failed_worker: index of the worker whose failure stopped the others (None if none).
    timed_out: the timeout passed before every worker finished.
    """

    exit_code: int
    workers: tuple[WorkerExit, ...]
    failed_worker: int | None
    timed_out: bool


def free_ports(count: int, host: str = "") -> list[int]:
    """`count` distinct TCP ports that are free now (each found by binding port 0).

    All sockets stay open until every port is chosen, so the ports differ; another
    program could still take one before the worker binds it (a short race).
    """
    sockets = []
    try:
        for _ in range(count):
            bound = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            bound.bind((host, 0))
            sockets.append(bound)
        return [bound.getsockname()[1] for bound in sockets]
    finally:
        for bound in sockets:
            bound.close()


def _port_is_free(port: int, host: str = "") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def worker_ports(num_workers: int, base_port: int | None = None) -> list[int]:
    """Ports of the workers: base_port, base_port + 1, ... or free ones (base_port None)."""
    if base_port is None:
        return free_ports(num_workers)
    if not 1024 <= base_port <= 65535 - num_workers:
        raise ConfigError(
            f"--port {base_port} is not valid; use a port in [1024, "
            f"{65535 - num_workers}] or leave it out to pick free ports"
        )
    ports = [base_port + index for index in range(num_workers)]
    taken = [port for port in ports if not _port_is_free(port)]
    if taken:
        raise ConfigError(
            f"port(s) {taken} are in use; choose another --port or leave it out to pick free ports"
        )
    return ports


def worker_tf_configs(ports: Sequence[int], host: str = DEFAULT_HOST) -> list[dict]:
    """One TF_CONFIG (as a dict) per worker of a cluster on `host` at `ports`."""
    addresses = [f"{host}:{port}" for port in ports]
    return [
        {"cluster": {"worker": addresses}, "task": {"type": "worker", "index": index}}
        for index in range(len(addresses))
    ]


def visible_gpu_ids(environ: Mapping[str, str]) -> list[str]:
    """GPU ids the workers may use: CUDA_VISIBLE_DEVICES if set, else nvidia-smi's list."""
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        ids = [device.strip() for device in visible.split(",") if device.strip()]
        return [device for device in ids if device != "-1"]
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        listing = subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    count = sum(line.startswith("GPU ") for line in listing.splitlines())
    return [str(index) for index in range(count)]


def worker_environments(
    num_workers: int, ports: Sequence[int], environ: Mapping[str, str], host: str = DEFAULT_HOST
) -> list[dict[str, str]]:
    """The environment of each worker: `environ` + TF_CONFIG (+ CUDA_VISIBLE_DEVICES).

    With G GPUs, worker i sees GPU i mod G (one per worker when num_workers <= G); on a
    machine without GPUs CUDA_VISIBLE_DEVICES is left as it is.
    """
    gpu_ids = visible_gpu_ids(environ)
    environments = []
    for index, tf_config in enumerate(worker_tf_configs(ports, host)):
        environment = dict(environ)
        environment["TF_CONFIG"] = json.dumps(tf_config)
        environment.setdefault("PYTHONUNBUFFERED", "1")
        if gpu_ids:
            environment["CUDA_VISIBLE_DEVICES"] = gpu_ids[index % len(gpu_ids)]
        environments.append(environment)
    return environments


def _shell_exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def _stream_lines(index: int, stream, lines: queue.Queue) -> None:
    """Read `stream` line by line into `lines` as (index, text); (index, None) at the end."""
    try:
        for raw in iter(stream.readline, b""):
            lines.put((index, raw.decode("utf-8", errors="replace").rstrip("\r\n")))
    finally:
        stream.close()
        lines.put((index, None))


class _Supervisor:
    """The running workers: output, exits, and stopping the others."""

    def __init__(self, processes, output: TextIO, grace_period: float, on_worker_exit):
        self.processes = processes
        self.output = output
        self.grace_period = grace_period
        self.on_worker_exit = on_worker_exit
        self.started = time.monotonic()
        self.lines: queue.Queue = queue.Queue()
        self.open_streams = len(processes)
        self.closed_streams: set[int] = set()
        self.exit_seen_at: dict[int, float] = {}
        self.exits: dict[int, WorkerExit] = {}
        self.exit_order: list[WorkerExit] = []
        self.stop_requested_at: float | None = None
        self.killed = False
        for index, process in enumerate(processes):
            threading.Thread(
                target=_stream_lines, args=(index, process.stdout, self.lines), daemon=True
            ).start()

    def print_available_lines(self, wait: float) -> None:
        deadline = time.monotonic() + wait
        while self.open_streams:
            try:
                index, text = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return
            if text is None:
                self.open_streams -= 1
                self.closed_streams.add(index)
            else:
                self.output.write(f"[worker {index}] {text}\n")
                self.output.flush()

    def record_exits(self) -> list[WorkerExit]:
        """Exits that happened since the last call.

        A worker's exit is reported once its output is printed (its stream closed), or
        DRAIN_SECONDS after it ended when something else still holds the stream open.
        """
        new = []
        now = time.monotonic()
        for index, process in enumerate(self.processes):
            returncode = process.poll()
            if returncode is None or index in self.exits:
                continue
            seen_at = self.exit_seen_at.setdefault(index, now)
            if index not in self.closed_streams and now - seen_at < DRAIN_SECONDS:
                continue
            worker_exit = WorkerExit(
                index,
                _shell_exit_code(returncode),
                seen_at - self.started,
                self.stop_requested_at is not None and seen_at >= self.stop_requested_at,
            )
            self.exits[index] = worker_exit
            self.exit_order.append(worker_exit)
            new.append(worker_exit)
            if self.on_worker_exit is not None:
                self.on_worker_exit(worker_exit)
        return new

    def running(self) -> bool:
        return len(self.exits) < len(self.processes)

    def request_stop(self) -> None:
        """SIGTERM every running worker's process group (once)."""
        if self.stop_requested_at is not None:
            return
        self.stop_requested_at = time.monotonic()
        self._signal_running(signal.SIGTERM)

    def kill_after_grace_period(self) -> None:
        if (
            self.stop_requested_at is not None
            and not self.killed
            and time.monotonic() - self.stop_requested_at >= self.grace_period
        ):
            self.killed = True
            self._signal_running(signal.SIGKILL)

    def _signal_running(self, signal_number: int) -> None:
        for process in self.processes:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal_number)

    def stop_now(self) -> None:
        """Stop every worker and wait for them (used on Ctrl-C and errors)."""
        self.request_stop()
        deadline = self.stop_requested_at + self.grace_period
        while self.running() and time.monotonic() < deadline:
            self.print_available_lines(POLL_SECONDS)
            self.record_exits()
        self._signal_running(signal.SIGKILL)
        for process in self.processes:
            process.wait()
        self.print_available_lines(POLL_SECONDS)
        self.closed_streams.update(range(len(self.processes)))
        self.record_exits()


def _start_workers(command: Sequence[str], environments: list[dict[str, str]]):
    processes = []
    try:
        for environment in environments:
            processes.append(
                subprocess.Popen(
                    list(command),
                    env=environment,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
    except OSError as error:
        for process in processes:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        raise ConfigError(
            f"cannot start the worker command {list(command)!r}: {error}; check "
            "the command after `--` (is it installed and on PATH?)"
        ) from None
    return processes


def run_local_workers(
    num_workers: int,
    command: Sequence[str],
    base_port: int | None = None,
    timeout: float | None = None,
    environ: Mapping[str, str] | None = None,
    output: TextIO | None = None,
    *,
    grace_period: float = DEFAULT_GRACE_PERIOD,
    host: str = DEFAULT_HOST,
    on_worker_exit: Callable[[WorkerExit], None] | None = None,
) -> LaunchResult:
    """Run `command` as `num_workers` cluster workers on this machine; see the module doc.

    command: argv of every worker (the same for all; TF_CONFIG tells them apart).
    base_port: first of the workers' consecutive ports (default: free ports).
    timeout: seconds before every worker is stopped (default: no limit).
    environ: the workers' base environment (default: os.environ).
    output: where the prefixed lines go (default: sys.stdout).
    grace_period: seconds between SIGTERM and SIGKILL when stopping workers.
    on_worker_exit: called with each WorkerExit as it happens.
    Ctrl-C stops every worker, then raises KeyboardInterrupt.
    """
    if not isinstance(num_workers, int) or num_workers < 1:
        raise ConfigError(f"-n {num_workers!r} is not valid; give the number of workers (>= 1)")
    if not command:
        raise ConfigError(
            "no worker command; give it after `--`, e.g. `actrec launch -n 2 -- actrec train ...`"
        )
    if timeout is not None and timeout <= 0:
        raise ConfigError(f"--timeout {timeout} is not valid; give seconds > 0")
    environ = os.environ if environ is None else environ
    output = sys.stdout if output is None else output
    ports = worker_ports(num_workers, base_port)
    environments = worker_environments(num_workers, ports, environ, host)
    supervisor = _Supervisor(
        _start_workers(command, environments), output, grace_period, on_worker_exit
    )
    failed_worker = None
    first_failure_code = 0
    timed_out = False
    try:
        while supervisor.running():
            supervisor.print_available_lines(POLL_SECONDS)
            for worker_exit in supervisor.record_exits():
                if worker_exit.exit_code != 0 and failed_worker is None and not timed_out:
                    failed_worker, first_failure_code = worker_exit.index, worker_exit.exit_code
                    supervisor.request_stop()
            if (
                timeout is not None
                and not timed_out
                and failed_worker is None
                and time.monotonic() - supervisor.started > timeout
            ):
                timed_out = True
                supervisor.request_stop()
            supervisor.kill_after_grace_period()
        supervisor.print_available_lines(DRAIN_SECONDS)
    except BaseException:
        supervisor.stop_now()
        supervisor.print_available_lines(POLL_SECONDS)
        raise
    exit_code = first_failure_code or (TIMEOUT_EXIT_CODE if timed_out else 0)
    return LaunchResult(exit_code, tuple(supervisor.exit_order), failed_worker, timed_out)


def launch_local_workers(
    num_workers: int,
    command: Sequence[str],
    base_port: int | None = None,
    timeout: float | None = None,
    environ: Mapping[str, str] | None = None,
    output: TextIO | None = None,
    **options,
) -> int:
    """`run_local_workers(...)`'s exit code: 0 when all succeed, else the first failure's
    code (124 on timeout). Keyword `options` are those of run_local_workers."""
    return run_local_workers(
        num_workers, command, base_port, timeout, environ, output, **options
    ).exit_code
