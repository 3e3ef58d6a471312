"""The Ray executor (`actrec prepare --executor ray`): videos encoded as Ray tasks, results
back in task order (actrec.data.prepare.in_flight).

The driver (this process) writes the shards, manifest and report from the results exactly
as with the local pool (actrec.data.prepare.executors.local), so the output is the same bytes
whatever order tasks finish in, and a killed run resumes the same way. Each video is one
task running encode_video; at most TASKS_IN_FLIGHT_PER_WORKER tasks per CPU of the cluster
are in flight, which bounds the object store's use when one video is slow. A task whose
node is lost is retried on another (TASK_RETRIES); a video whose decoder crashes its worker
process on every try is skipped as undecodable, as the local pool does.

Before any work, a task on every alive node with CPUs (NodeAffinitySchedulingStrategy)
reports whether it reads a few of the dataset's videos and its actrec and OpenCV versions;
a node that cannot, or differs, fails the run by name (node_problems): it would otherwise
skip its share as missing, or encode other bytes.

Ray is an optional extra, imported here only; RAY_USAGE_STATS_ENABLED=0 is set before it is
imported, so Ray never reports usage statistics (docs/cluster.md). A Ray started here (no
--address) listens on loopback only, with Ray's token authentication on:

On Linux Ray gives its node the machine's address, even when told 127.0.0.1
(`_node_ip_address` is resolved to a "remotely reachable" address), and its GCS, raylet,
object manager and every worker's gRPC server then listen on all interfaces. The local-only
mode Ray uses on macOS and Windows (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, read once, when
`ray` is imported) keeps the node on 127.0.0.1, and every one of those servers listens there
(measured with Ray 2.52.0 and 2.60.0; tests/data/test_prepare_ray.py checks the installed
Ray). Ray reads these settings once, so a process that imported Ray without them is refused
a local Ray, and one that imported Ray with them would give a remote cluster it then joins
127.0.0.1 as its address: `actrec prepare` does one or the other. Token
authentication (Ray >= 2.52, RAY_AUTH_MODE=token) uses a new random token per run, given to
Ray's processes in their environment, so nothing is written to ~/.ray. Joining a cluster is
only ever by an explicit --address, which none of this touches.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import sys
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import actrec
from actrec.data.prepare.executors.local import TASKS_IN_FLIGHT_PER_WORKER
from actrec.data.prepare.executors.registry import ExecutorKind, ExecutorOption
from actrec.data.prepare.in_flight import results_in_order
from actrec.errors import ClusterError

if TYPE_CHECKING:
    from actrec.data.prepare.encode_video import PrepareSettings, VideoResult, VideoTask

LOOPBACK = "127.0.0.1"
LOCAL_OBJECT_STORE_BYTES = 128 * 1024 * 1024
"""The object store of a Ray started on this machine: the results in flight (a few MB per
video); Ray spills to disk beyond it rather than taking a share of the memory."""
DOCS = "docs/cluster.md"
_TOKEN = secrets.token_hex(32)  # 256 bits, as `ray get-auth-token`; one per process, as
# Ray's C++ side keeps the first token it reads
_started = False  # whether this process imported Ray in local_ray_environment()


def local_ray_environment() -> dict[str, str]:
    """The environment of a local Ray: loopback only, token authentication. Set before `ray`
    is imported: Ray reads these once, when it is imported."""
    return {
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # the node's address: 127.0.0.1
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": _TOKEN,
    }


def refuse_ray_imported_before() -> None:
    """ClusterError when this process imported Ray other than for a local Ray: it read its
    settings then, and would listen on the machine's address, without a token."""
    if sys.modules.get("ray") is not None and not _started:
        raise ClusterError(
            "Ray was imported in this process before actrec could start it on loopback with "
            "a token: run `actrec prepare --executor ray` (or RayExecutor without an "
            f"address) in a process of its own, before anything imports Ray ({DOCS})"
        )


def start_local_ray(ray, workers: int) -> None:
    """ray.init of a new Ray of our own ("local": never one found on the machine) on
    loopback, with `workers` CPUs; warns in one line when its node is not on loopback
    (a Ray that ignores local_ray_environment())."""
    global _started
    _started = True  # `ray` was imported in local_ray_environment()
    ray.init(
        address="local",
        num_cpus=workers,
        object_store_memory=LOCAL_OBJECT_STORE_BYTES,
        include_dashboard=False,
        dashboard_host=LOOPBACK,
        _node_ip_address=LOOPBACK,
        logging_level=logging.WARNING,
    )
    node = ray.util.get_node_ip_address()
    if node != LOOPBACK:
        warnings.warn(
            f"the local Ray listens on {node}, not only on {LOOPBACK}: this Ray "
            f"({ray.__version__}) does not keep a local node on loopback ({DOCS})",
            stacklevel=2,
        )


class EnvironmentSet:
    """os.environ updated with `values` until `restore()` puts back what was there."""

    def __init__(self, values: dict[str, str]):
        self._before = {name: os.environ.get(name) for name in values}
        os.environ.update(values)

    def restore(self) -> None:
        for name, value in self._before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


RAY_EXTRA = 'pip install "actrec[ray]"'
TASK_RETRIES = 3
"""Tries of a video beyond the first when its worker or node dies (Ray's `max_retries`)."""
CONNECT_TIMEOUT_SECONDS = 5.0
NODE_CHECK_TIMEOUT_SECONDS = 120.0
"""How long every node has to start a worker process and answer the up-front check."""


@dataclass(frozen=True)
class NodeReport:
    """What a node says about itself: its actrec and OpenCV versions (None: not importable)
    and the videos it could not read, (path, error)."""

    node: str
    actrec: str | None
    opencv: str | None
    unreadable: tuple[tuple[str, str], ...] = ()


def node_problems(driver: NodeReport, reports: Sequence[NodeReport]) -> list[str]:
    """One line per node that cannot encode as this machine does, naming the node and fix."""
    problems = []
    for report in reports:
        for name, theirs, ours in (
            ("actrec", report.actrec, driver.actrec),
            ("OpenCV", report.opencv, driver.opencv),
        ):
            if theirs != ours:
                problems.append(
                    f"node {report.node} has {name} {theirs or '(not installed)'}, this machine "
                    f"{ours}: install the same version on every node (one container image)"
                )
        for path, error in report.unreadable:
            problems.append(f"node {report.node} cannot read {path}: {error}")
    return problems


def _report_function():
    """The check run on every node. Defined inside a function so that Ray ships its code
    (cloudpickle pickles a module-level function by name, which a node without actrec
    could not import: it would fail instead of reporting)."""

    def report(paths: list[str]) -> dict:
        def version(module: str) -> str | None:
            try:
                return __import__(module).__version__
            except ImportError:
                return None

        unreadable = []
        for path in paths:
            try:
                with open(path, "rb") as handle:
                    handle.read(4096)
            except OSError as error:
                unreadable.append((path, f"{type(error).__name__}: {error.strerror or error}"))
        return {
            "actrec": version("actrec"),
            "opencv": version("cv2"),
            "unreadable": tuple(unreadable),
        }

    return report


def _encode_on_node(task: VideoTask, settings: PrepareSettings) -> VideoResult:
    # inside: the registry imports every executor to list it, and encode_video loads OpenCV
    from actrec.data.prepare.encode_video import encode_video, initialise_worker

    initialise_worker()
    return encode_video(task, settings)


def _check_reachable(address: str) -> None:
    """Fail within seconds when nothing listens at HOST:PORT: ray.init retries a dead
    address for minutes (measured with Ray 2.60: still waiting after 100 s)."""
    host, _, port = address.rpartition(":")
    if address.startswith("ray://") or not host or not port.isdigit():
        raise ClusterError(
            f"--address {address!r} is not the HOST:PORT of a Ray cluster's head (its GCS, "
            "port 6379 by default; Ray Client's ray:// is not supported): run actrec on a "
            f"node of the cluster with --address HEAD:6379 or --address auto ({DOCS})"
        )
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_SECONDS).close()
    except OSError as error:
        raise ClusterError(
            f"no Ray cluster answers at --address {address} ({error}): start its head with "
            "`ray start --head --disable-usage-stats` and give its address, or leave out "
            f"--address to run Ray on this machine ({DOCS})"
        ) from None


def connect_ray(address: str | None, workers: int):
    """Ray, connected to the cluster at `address` ("auto": the one this node belongs to), or
    started on this machine with `workers` CPUs, on loopback only, its settings put in the
    environment before `import ray` (local_ray_environment). Returns the ray module and a function
    that takes those settings back out of the environment (after ray.shutdown())."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"  # always: never report to Ray's server
    if address is None:
        refuse_ray_imported_before()
    local = EnvironmentSet(local_ray_environment() if address is None else {})
    try:
        try:
            import ray
        except ImportError as error:
            raise ClusterError(
                f"--executor ray needs Ray, which cannot be imported here ({error}): {RAY_EXTRA}"
            ) from None
        if address is None:
            start_local_ray(ray, workers)
            return ray, local.restore
        if address != "auto":
            _check_reachable(address)
        try:
            ray.init(address=address, logging_level=logging.WARNING)
        except ConnectionError as error:
            raise ClusterError(
                f"cannot join the Ray cluster at {address}: {error} ({DOCS})"
            ) from None
        return ray, local.restore
    except BaseException:
        local.restore()
        raise


class RayExecutor:
    """Videos encoded as Ray tasks; `with RayExecutor(address, workers) as executor:`
    connects (or starts Ray on this machine) and disconnects (stops it) at the end."""

    def __init__(self, address: str | None = None, workers: int = 1):
        self.address = address
        self.workers = workers
        self._ray = None
        self._restore = None

    def __enter__(self) -> RayExecutor:
        self._ray, self._restore = connect_ray(self.address, self.workers)
        return self

    def __exit__(self, *exc_info) -> None:
        try:
            self._ray.shutdown()
        finally:
            self._restore()

    def _nodes(self) -> list[dict]:
        return [
            node
            for node in self._ray.nodes()
            if node["Alive"] and node["Resources"].get("CPU", 0) > 0
        ]

    def check_nodes(self, paths: Sequence[str]) -> None:
        """Raise ClusterError naming every node that cannot read `paths` or whose actrec or
        OpenCV differs from this machine's."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray = self._ray
        nodes = self._nodes()
        if not nodes:
            raise ClusterError(f"the Ray cluster has no node with a CPU to encode on ({DOCS})")
        report = ray.remote(_report_function())
        asked = {
            report.options(
                num_cpus=0,  # a node busy with another job's tasks still answers
                max_retries=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False),
            ).remote(list(paths)): f"{node['NodeManagerAddress']} ({node['NodeID'][:12]})"
            for node in nodes
        }
        answered, silent = ray.wait(
            list(asked), num_returns=len(asked), timeout=NODE_CHECK_TIMEOUT_SECONDS
        )
        wait = f"{NODE_CHECK_TIMEOUT_SECONDS:.0f} s"
        problems = [f"node {asked[ref]} did not answer the check in {wait}" for ref in silent]
        reports = []
        for ref in answered:
            try:
                reports.append(NodeReport(asked[ref], **ray.get(ref)))
            except ray.exceptions.RayError as error:
                problems.append(f"node {asked[ref]} failed the check: {str(error).strip()[:300]}")
        import cv2

        driver = NodeReport("this machine", actrec.__version__, cv2.__version__)
        problems += node_problems(driver, reports)
        if problems:
            raise ClusterError(
                "the Ray cluster cannot prepare this dataset:\n  "
                + "\n  ".join(problems)
                + "\nEvery node must see the videos at the same path (NFS, Lustre, a bucket "
                f"mounted with FUSE) and run this machine's actrec and OpenCV ({DOCS})."
            )

    def encode_in_order(
        self, tasks: Iterable[VideoTask], settings: PrepareSettings
    ) -> Iterator[VideoResult]:
        """Yield encode_video(task) for every task, in task order, as Ray tasks."""
        # inside: OpenCV, as _encode_on_node's
        from actrec.data.prepare.encode_video import VideoResult

        ray = self._ray
        encode = ray.remote(_encode_on_node).options(num_cpus=1, max_retries=TASK_RETRIES)
        limit = max(1, int(ray.cluster_resources().get("CPU", 1))) * TASKS_IN_FLIGHT_PER_WORKER

        def collect(task, ref) -> VideoResult:
            try:
                return ray.get(ref)
            except ray.exceptions.WorkerCrashedError:
                return VideoResult.skipped(
                    task,
                    "undecodable",
                    f"the video decoder crashed its Ray worker process, {TASK_RETRIES + 1} times",
                )

        yield from results_in_order(
            tasks, lambda task: encode.remote(task, settings), collect, limit, cancel=ray.cancel
        )


@contextlib.contextmanager
def _open(workers: int, address: str | None = None) -> Iterator[RayExecutor]:
    with RayExecutor(address, workers) as executor:
        yield executor


EXECUTOR = ExecutorKind(
    name="ray",
    summary='Ray tasks (pip install "actrec[ray]"; docs/cluster.md)',
    open=_open,
    options=(
        ExecutorOption(
            "address",
            "the Ray cluster's head, HOST:PORT (or auto on a node of it) [default: start "
            "Ray on this machine, on loopback, with --workers CPUs]",
        ),
    ),
)
