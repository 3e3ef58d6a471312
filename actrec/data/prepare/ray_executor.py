"""Encode videos as Ray tasks (`actrec prepare --executor ray`), results back in task order.

The driver (this process) writes the shards, manifest and report from the results exactly
as with the local pool (actrec.data.prepare.parallel), so the output is the same bytes
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
--address) listens on loopback only, with token authentication (local_ray.py).
"""

from __future__ import annotations

import logging
import os
import socket
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import cv2

import actrec
from actrec.data.prepare.encode_video import (
    PrepareSettings,
    VideoResult,
    VideoTask,
    encode_video,
    initialise_worker,
)
from actrec.data.prepare.local_ray import (
    EnvironmentSet,
    local_ray_environment,
    refuse_ray_imported_before,
    start_local_ray,
)
from actrec.data.prepare.parallel import TASKS_IN_FLIGHT_PER_WORKER
from actrec.errors import ClusterError

RAY_EXTRA = 'pip install "actrec[ray]"'
TASK_RETRIES = 3
"""Tries of a video beyond the first when its worker or node dies (Ray's `max_retries`)."""
CONNECT_TIMEOUT_SECONDS = 5.0
NODE_CHECK_TIMEOUT_SECONDS = 120.0
"""How long every node has to start a worker process and answer the up-front check."""
DOCS = "docs/cluster.md"


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
    environment before `import ray` (local_ray.py). Returns the ray module and a function
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
        ray = self._ray
        encode = ray.remote(_encode_on_node).options(num_cpus=1, max_retries=TASK_RETRIES)
        limit = max(1, int(ray.cluster_resources().get("CPU", 1))) * TASKS_IN_FLIGHT_PER_WORKER
        pending = deque(tasks)
        window: deque = deque()  # (task, its ObjectRef), oldest first
        while pending or window:
            while pending and len(window) < limit:
                task = pending.popleft()
                window.append((task, encode.remote(task, settings)))
            task, ref = window.popleft()
            try:
                result = ray.get(ref)
            except ray.exceptions.WorkerCrashedError:
                result = VideoResult.skipped(
                    task,
                    "undecodable",
                    f"the video decoder crashed its Ray worker process, {TASK_RETRIES + 1} times",
                )
            yield result
