"""The Ray executor against the local pool on the same videos, in one run (docs/cluster.md).

    python benchmarks/prepare_ray.py [--videos-per-class 8] [--workers 2]

Prepares one synthetic set three times: the local pool (`--workers` processes), Ray started
on this machine (`--executor ray`, `--workers` CPUs), and a two-node Ray cluster on
localhost (a head and a worker node, `ray start`, one CPU each). Prints each preparation's
time (Ray's start-up apart), the ratios to the local pool and the overhead per video. Needs
root: it runs itself in a network namespace with only loopback up (`unshare --net`: Ray binds
the machine's address even when told 127.0.0.1), so nothing leaves the machine; usage
statistics are off (RAY_USAGE_STATS_ENABLED=0, --disable-usage-stats).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from actrec.data.prepare.dataset import prepare_dataset
from actrec.data.prepare.encode_video import PrepareSettings
from actrec.data.prepare.executors.local import LocalPool
from actrec.data.prepare.executors.ray import RayExecutor
from actrec.data.sources import list_videos
from actrec.data.synthetic.config import SyntheticConfig
from actrec.data.synthetic.dataset import generate_synthetic_dataset

PORT = 6379  # the namespace's own loopback
SETTINGS = PrepareSettings(frame_size="original", flow="dis")


def _timed(listing, out: Path, executor) -> float:
    started = time.perf_counter()
    prepare_dataset(listing, out, SETTINGS, executor=executor)
    return time.perf_counter() - started


def _ray_node(folder: Path, *arguments: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "ray.scripts.scripts", "start", "--block", "--num-cpus", "1"]
    command += ["--object-store-memory", str(80 * 1024 * 1024), "--disable-usage-stats"]
    command += ["--node-ip-address", "127.0.0.1", *arguments]
    log = (folder / f"node-{len(list(folder.glob('node-*')))}.log").open("w")
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)


def _stop(node: subprocess.Popen) -> None:
    """SIGKILL the node's `ray start` and all its descendants, by id (not `ray stop`)."""
    pids, index = [node.pid], 0
    while index < len(pids):
        for task in Path(f"/proc/{pids[index]}/task").glob("*"):
            with contextlib.suppress(OSError):
                pids += [int(pid) for pid in (task / "children").read_text().split()]
        index += 1
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    node.wait()


def _two_node_seconds(listing, folder: Path) -> tuple[float, float]:
    head = _ray_node(folder, "--head", "--port", str(PORT), "--temp-dir", str(folder / "r"))
    worker = None
    try:
        time.sleep(3)
        worker = _ray_node(folder, "--address", f"127.0.0.1:{PORT}")
        started = time.perf_counter()
        with RayExecutor(f"127.0.0.1:{PORT}") as executor:
            import ray  # connected by the executor

            while len([node for node in ray.nodes() if node["Alive"]]) < 2:
                time.sleep(0.2)
            joined = time.perf_counter() - started
            return joined, _timed(listing, folder / "two-nodes", executor)
    finally:
        for node in (worker, head):
            if node is not None:
                _stop(node)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos-per-class", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if os.environ.get("ACTREC_BENCH_NAMESPACE") != "1":  # run again inside the namespace
        os.execvp(
            "unshare",
            [
                *("unshare", "--net", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"),
                *("env", "ACTREC_BENCH_NAMESPACE=1", sys.executable, *sys.argv),
            ],
        )
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    # No token file left in ~/.ray by the local Ray, which `ray start` would then require.
    os.environ["RAY_AUTH_MODE"] = "disabled"
    folder = Path(tempfile.mkdtemp(prefix="arb-", dir="/tmp"))  # short: Ray's socket paths
    config = SyntheticConfig(videos_per_class=args.videos_per_class)
    generate_synthetic_dataset(folder / "raw", config)
    listing = list_videos("synthetic", folder / "raw")
    videos = len(listing.entries)
    cpu = "AMD EPYC with AVX-512" if " avx512f" in Path("/proc/cpuinfo").read_text() else "other"
    print(
        f"{videos} synthetic videos ({config.width}x{config.height}, {config.num_frames} frames), "
        f"DIS flow; CPU: {cpu}, {os.cpu_count()} cores"
    )
    # Whole preparations, start-up included: the local pool starts its processes per split,
    # Ray its cluster once (printed apart).
    # The local pool runs first and last: the first preparation of a set pays the cold
    # caches (files, imports), so the pool's figure is the mean of the two.
    first = _timed(listing, folder / "local", LocalPool(args.workers))
    print(f"local pool, {args.workers} processes:    {first:6.2f} s (first)")
    started = time.perf_counter()
    with RayExecutor(None, args.workers) as executor:
        start_up = time.perf_counter() - started
        on_ray = start_up + _timed(listing, folder / "ray-local", executor)
    print(f"Ray here, {args.workers} CPUs:            {on_ray:6.2f} s ({start_up:.1f} s start)")
    joined, two_nodes = _two_node_seconds(listing, folder)
    two_nodes += joined
    print(f"two nodes, 1 + 1 CPUs:     {two_nodes:6.2f} s ({joined:.1f} s to join)")
    last = _timed(listing, folder / "local-again", LocalPool(args.workers))
    local = (first + last) / 2
    print(f"local pool, {args.workers} processes:    {last:6.2f} s (last; mean {local:.2f} s)")
    for name, seconds in (("Ray here", on_ray), ("two nodes", two_nodes)):
        overhead = (seconds - local) / videos * 1000
        print(f"{name}: {seconds / local:.2f}x the local pool, {overhead:+.1f} ms per video")
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
