"""`actrec prepare --executor ray` on a real two-node Ray cluster on localhost.

The cluster (a head and a worker node, one CPU each, a small object store) runs in a network
namespace of its own with only loopback up (`unshare --net`: Ray binds the machine's address
even when told 127.0.0.1), so no test sends a packet off loopback; the drivers enter it with
`nsenter`. The worker node also runs in a mount namespace where HIDDEN is an empty tmpfs: a
dataset there is one the head sees and the worker does not. The cluster's processes are
stopped by process id, with their children (`ray stop` would stop every Ray process on the
machine). One cluster serves the module.

The local Ray (no --address) starts in a namespace of its own too, one that also has a
non-loopback interface (a veth pair, 10.123.0.1/24, the default route through it: Ray takes
that address when left to itself), and every socket listening there must be on loopback.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cv2
import pytest
from repo_paths import REPO_ROOT, TEST_DATA

from actrec.data.prepare.dataset import prepare_dataset
from actrec.data.prepare.encode_video import PrepareSettings
from actrec.data.prepare.executors.ray import (
    LOOPBACK,
    RAY_EXTRA,
    NodeReport,
    RayExecutor,
    node_problems,
)
from actrec.data.prepare.plan import PARTIAL_DIR, STATE_FILE
from actrec.data.sources import list_videos
from actrec.data.synthetic.config import SyntheticConfig
from actrec.data.synthetic.dataset import generate_synthetic_dataset
from actrec.errors import ClusterError

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("nsenter") is None,
    reason="the Ray cluster tests need root, unshare and nsenter (a network namespace)",
)

PORT = 6379  # the namespace's own loopback: no other process listens there
NODE_OPTIONS = ["--num-cpus", "1", "--object-store-memory", str(80 * 1024 * 1024)]
NODE_OPTIONS += ["--disable-usage-stats", "--node-ip-address", "127.0.0.1", "--block"]
# No token: the cluster is reachable from its namespace only, and a token file that a local
# ray.init left in ~/.ray would otherwise switch the head to token authentication.
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
# Farneback at 128 px keeps a video slow enough (~0.05 s) to kill a run mid-way.
ARGUMENTS = ["--flow", "farneback", "--size", "128", "--shard-size-mb", "0.2"]
SETTINGS = PrepareSettings(frame_size="128", flow="farneback", shard_size_mb=0.2)


def _descendants(pid: int) -> list[int]:
    """`pid`'s children, theirs, ... (from /proc), deepest last."""
    found, queue = [], [pid]
    while queue:
        parent = queue.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                children = [int(child) for child in (task / "children").read_text().split()]
            except OSError:
                continue
            found += children
            queue += children
    return found


def _kill_tree(process: subprocess.Popen) -> None:
    """SIGKILL a process and every descendant, each by its id."""
    for pid in [process.pid, *_descendants(process.pid)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    process.wait()


class Cluster:
    """A head (in a new network namespace) and a worker node that can be killed and restarted."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.hidden = folder / "hidden"
        self.hidden.mkdir()
        self.env = {**os.environ, **RAY_ENV}
        ray = [sys.executable, "-m", "ray.scripts.scripts", "start"]
        self.head_log = folder / "head.log"
        with self.head_log.open("w") as log:
            self.head = subprocess.Popen(
                [
                    *("unshare", "--net", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *ray),
                    *("--head", "--port", str(PORT), "--temp-dir", str(folder / "r")),
                    *(*NODE_OPTIONS, "--include-dashboard", "false"),
                ],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.enter = ["nsenter", f"--net=/proc/{self.head.pid}/ns/net"]
        self._wait_for_the_head_namespace()
        self.worker_command = [
            *self.enter,
            *("unshare", "--mount", "--propagation", "private", "sh", "-c"),
            f'mount -t tmpfs none {self.hidden} && exec "$@"',
            *("sh", *ray, "--address", f"127.0.0.1:{PORT}", *NODE_OPTIONS),
        ]
        self.worker = None

    def _wait_for_the_head_namespace(self, seconds: float = 60) -> None:
        """Until the head's process has left this process's network namespace.

        Right after Popen, /proc/PID/ns/net is still this namespace (`unshare` has not run
        yet): an nsenter then would join the machine's network, where nothing listens on
        PORT. On a loaded machine that window is long enough to lose the whole cluster.
        """
        own = os.readlink("/proc/self/ns/net")
        deadline = time.monotonic() + seconds
        while os.readlink(f"/proc/{self.head.pid}/ns/net") == own:
            assert self.head.poll() is None, f"the head exited: {self.head_log.read_text()}"
            assert time.monotonic() < deadline, "the head got no network namespace"
            time.sleep(0.01)

    def start_worker(self) -> None:
        self.worker = subprocess.Popen(
            self.worker_command, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self.run_python(
            "import ray, socket, time\n"
            "deadline = time.monotonic() + 150  # a loaded CI machine starts Ray slowly\n"
            "while True:  # the head's GCS listens\n"
            "    try:\n"
            f"        socket.create_connection(('127.0.0.1', {PORT}), timeout=1).close()\n"
            "        break\n"
            "    except OSError:\n"
            "        assert time.monotonic() < deadline, 'the head did not start'\n"
            "        time.sleep(0.2)\n"
            f"ray.init(address='127.0.0.1:{PORT}', logging_level='ERROR')\n"
            "while len([n for n in ray.nodes() if n['Alive']]) < 2:\n"
            "    assert time.monotonic() < deadline, ray.nodes()\n"
            "    time.sleep(0.2)\n",
            timeout=200,
        )

    def kill_worker(self) -> None:
        _kill_tree(self.worker)

    def run_python(self, code: str, timeout: float) -> str:
        result = subprocess.run(
            [*self.enter, sys.executable, "-c", code],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        head = "" if self.head.poll() is None else f"the head exited: {self.head_log.read_text()}"
        assert result.returncode == 0, f"{result.stderr}{head}"
        return result.stdout

    def prepare(self, *arguments: str) -> list[str]:
        """The command of a driver inside the namespace, joining this cluster."""
        return [
            *self.enter,
            *(sys.executable, "-m", "actrec_cli.main", "prepare", *arguments),
            *("--executor", "ray", "--address", f"127.0.0.1:{PORT}"),
        ]

    def stop(self) -> None:
        if self.worker is not None:
            _kill_tree(self.worker)
        _kill_tree(self.head)


@pytest.fixture(scope="module")
def cluster():
    # A short path: Ray's Unix sockets live under --temp-dir (at most ~107 characters).
    folder = Path(tempfile.mkdtemp(prefix="ar-", dir="/tmp"))
    started = Cluster(folder)
    try:
        started.start_worker()
        yield started
    finally:
        started.stop()
        shutil.rmtree(folder, ignore_errors=True)


def _real_clips(root: Path, pieces: int = 10, frames: int = 12) -> Path:
    """A class-per-folder tree of `pieces` consecutive cuts of each real clip (UCF101,
    Kinetics), `frames` frames each at 160 px wide, written as MJPG."""
    for clip in sorted((TEST_DATA / "videos").iterdir()):
        capture = cv2.VideoCapture(str(clip))
        folder = root / clip.stem.split("_")[1 if clip.stem.startswith("v_") else 0]
        folder.mkdir(parents=True, exist_ok=True)
        for piece in range(pieces):
            writer = None
            for _ in range(frames):
                ok, frame = capture.read()
                assert ok, f"{clip} has fewer than {pieces * frames} frames"
                frame = cv2.resize(frame, (160, 160 * frame.shape[0] // frame.shape[1]))
                if writer is None:
                    size = (frame.shape[1], frame.shape[0])
                    path = folder / f"{clip.stem}_{piece:02d}.avi"
                    fourcc = cv2.VideoWriter_fourcc(*"MJPG")
                    writer = cv2.VideoWriter(str(path), fourcc, 25.0, size)
                writer.write(frame)
            writer.release()
        capture.release()
    return root


def _local_reference(dataset: str, root: Path, out: Path) -> Path:
    prepare_dataset(list_videos(dataset, root), out, SETTINGS, workers=1, root=root.resolve())
    return out


def _assert_identical(prepared: Path, reference: Path) -> None:
    """Every file the same bytes, the manifest's `created` time aside."""
    names = sorted(path.name for path in reference.iterdir())
    assert sorted(path.name for path in prepared.iterdir()) == names
    for name in names:
        ours, theirs = (prepared / name).read_bytes(), (reference / name).read_bytes()
        if name == "manifest.json":
            ours, theirs = json.loads(ours), json.loads(theirs)
            ours.pop("created"), theirs.pop("created")
        assert ours == theirs, name


def _run_until_killed(command: list[str], prepared: Path, kill) -> subprocess.Popen:
    """Start `command`, and call `kill(process)` once it has closed a shard."""
    process = subprocess.Popen(
        command, cwd=REPO_ROOT, env={**os.environ, **RAY_ENV}, stdout=subprocess.DEVNULL
    )
    state = prepared / PARTIAL_DIR / STATE_FILE
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if state.exists() and state.read_text().count("\n") >= 1:
            break
        time.sleep(0.02)
    assert process.poll() is None, "the run ended before it could be killed"
    kill(process)
    return process


@pytest.mark.slow
def test_synthetic_set_on_two_nodes_is_byte_identical_to_the_local_pool(cluster, tmp_path):
    root = tmp_path / "raw"
    generate_synthetic_dataset(
        root, SyntheticConfig(videos_per_class=3, num_frames=10, width=64, height=48)
    )
    reference = _local_reference("synthetic", root, tmp_path / "local")
    out = tmp_path / "ray"
    subprocess.run(
        cluster.prepare("synthetic", "--root", str(root), "--out", str(out), *ARGUMENTS),
        cwd=REPO_ROOT,
        env=cluster.env,
        check=True,
        capture_output=True,
        timeout=180,
    )
    _assert_identical(out, reference)


@pytest.mark.slow
def test_a_killed_driver_started_again_ends_byte_identical(cluster, tmp_path):
    root = _real_clips(tmp_path / "clips")
    out = tmp_path / "ray"
    command = cluster.prepare("folder", "--root", str(root), "--out", str(out), *ARGUMENTS)
    _run_until_killed(command, out, _kill_tree)
    assert not (out / "manifest.json").exists()
    result = subprocess.run(
        command, cwd=REPO_ROOT, env=cluster.env, capture_output=True, text=True, timeout=180
    )
    assert result.returncode == 0, result.stderr
    assert "resumed: " in result.stdout
    _assert_identical(out, _local_reference("folder", root, tmp_path / "local"))


@pytest.mark.slow
def test_a_worker_node_killed_mid_run_loses_no_video(cluster, tmp_path):
    root = _real_clips(tmp_path / "clips")
    out = tmp_path / "ray"
    command = cluster.prepare("folder", "--root", str(root), "--out", str(out), *ARGUMENTS)
    try:
        process = _run_until_killed(command, out, lambda _: cluster.kill_worker())
        assert process.wait(timeout=180) == 0
        manifest = json.loads((out / "manifest.json").read_text())
        assert {video["status"] for video in manifest["videos"]} == {"ok"}
        assert len(manifest["videos"]) == 20
        _assert_identical(out, _local_reference("folder", root, tmp_path / "local"))
    finally:
        cluster.start_worker()


@pytest.mark.slow
def test_a_node_that_cannot_read_the_videos_fails_the_run_by_name(cluster, tmp_path):
    root = cluster.hidden / "synthetic"  # the worker node sees an empty tmpfs there
    generate_synthetic_dataset(
        root, SyntheticConfig(videos_per_class=2, num_frames=10, width=64, height=48)
    )
    out = tmp_path / "out"
    result = subprocess.run(
        cluster.prepare("synthetic", "--root", str(root), "--out", str(out)),
        cwd=REPO_ROOT,
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "cannot read" in result.stderr and str(root) in result.stderr
    assert "node 127.0.0.1 (" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()  # nothing written


def test_an_address_with_no_cluster_fails_within_seconds(tmp_path, cli_runner):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    root = tmp_path / "raw"
    generate_synthetic_dataset(
        root, SyntheticConfig(videos_per_class=2, num_frames=10, width=64, height=48)
    )
    started = time.monotonic()
    result = cli_runner(
        "prepare", "synthetic", "--root", root, "--out", tmp_path / "out",
        "--executor", "ray", "--address", f"127.0.0.1:{port}",
    )  # fmt: skip
    assert time.monotonic() - started < 30
    assert result.exit_code == 1
    assert f"no Ray cluster answers at --address 127.0.0.1:{port}" in result.output
    assert "ray start --head --disable-usage-stats" in result.output
    assert not (tmp_path / "out").exists()


def test_executor_ray_without_ray_names_the_extra(tmp_path):
    code = (
        "import sys\n"
        "sys.modules['ray'] = None  # an environment without Ray: `import ray` fails\n"
        "from actrec_cli.main import main\n"
        "main()\n"
    )
    root = tmp_path / "raw"
    generate_synthetic_dataset(
        root, SyntheticConfig(videos_per_class=2, num_frames=10, width=64, height=48)
    )
    result = subprocess.run(
        [
            *(sys.executable, "-c", code, "prepare", "synthetic", "--root", str(root)),
            *("--out", str(tmp_path / "out"), "--executor", "ray"),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert RAY_EXTRA in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_node_problems_name_the_node_and_what_differs():
    driver = NodeReport("this machine", "1.2.0", "4.10.0")
    reports = [
        NodeReport("10.0.0.2 (a1)", "1.2.0", "4.10.0"),
        NodeReport("10.0.0.3 (b2)", "1.1.0", "4.9.0"),
        NodeReport("10.0.0.4 (c3)", None, "4.10.0", (("/data/v.mp4", "FileNotFoundError"),)),
    ]
    problems = node_problems(driver, reports)
    assert problems == [
        "node 10.0.0.3 (b2) has actrec 1.1.0, this machine 1.2.0: install the same version "
        "on every node (one container image)",
        "node 10.0.0.3 (b2) has OpenCV 4.9.0, this machine 4.10.0: install the same version "
        "on every node (one container image)",
        "node 10.0.0.4 (c3) has actrec (not installed), this machine 1.2.0: install the same "
        "version on every node (one container image)",
        "node 10.0.0.4 (c3) cannot read /data/v.mp4: FileNotFoundError",
    ]


INTERFACE = "10.123.0.1"  # inside the namespace only: no packet leaves it
WITH_AN_INTERFACE = (
    "ip link set lo up && ip link add actrec0 type veth peer name actrec1"
    f" && ip addr add {INTERFACE}/24 dev actrec0 && ip link set actrec0 up"
    " && ip link set actrec1 up && ip route add default via 10.123.0.2 dev actrec0"
)
# What Ray takes as the node's address when left to itself (a UDP connect: sends nothing);
# a process of its own, as the driver must import Ray after actrec sets its environment.
RAYS_OWN_CHOICE = (
    "from ray._private.services import node_ip_address_from_perspective as address\n"
    "print('address', address(), flush=True)\n"
)
LOCAL_DRIVER = (
    "import sys\n"
    "from actrec.data.prepare.executors.ray import RayExecutor\n"
    "with RayExecutor(None, 1) as executor:  # as `actrec prepare --executor ray` does\n"
    "    executor.check_nodes([])  # a task: a worker process listens too\n"
    "    print('ready', flush=True)\n"
    "    sys.stdin.readline()\n"
)


def _namespace_processes(pid: int) -> dict[Path, str]:
    """/proc/PID -> name of every process in the network namespace of process `pid`."""
    namespace, found = os.readlink(f"/proc/{pid}/ns/net"), {}
    for process in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if process.name.isdigit() and os.readlink(process / "ns/net") == namespace:
                found[process] = (process / "comm").read_text().strip()
    return found


def _listening(pid: int) -> list[tuple[str, int, str]]:
    """(address, port, process) of every TCP socket listening, and every UDP socket bound,
    in the network namespace of process `pid` (/proc/PID/net/*)."""
    owners = {}  # socket inode -> "name (pid)"
    for process, name in _namespace_processes(pid).items():
        for fd in process.glob("fd/*"):
            with contextlib.suppress(OSError):
                link = os.readlink(fd)
                if link.startswith("socket:["):
                    owners[link[8:-1]] = f"{name} ({process.name})"
    found = []
    for table, state in (("tcp", "0A"), ("tcp6", "0A"), ("udp", "07"), ("udp6", "07")):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == state:
                address, port = fields[1].split(":")
                words = bytes.fromhex(address)  # 32-bit words, each little-endian
                raw = b"".join(words[i : i + 4][::-1] for i in range(0, len(words), 4))
                ip = ipaddress.ip_address(raw)
                found.append((str(ip), int(port, 16), owners.get(fields[9], "?")))
    return found


def _on_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, "ipv4_mapped", None)  # ::ffff:127.0.0.1
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("ip") is None, reason="needs `ip` (iproute2) for a veth pair")
def test_a_local_ray_listens_on_loopback_only_with_token_authentication(tmp_path):
    home = tmp_path / "home"  # where Ray would write its token file (~/.ray/auth_token)
    home.mkdir()
    log = tmp_path / "driver.log"
    with log.open("w") as stderr:
        driver = subprocess.Popen(
            [
                *("unshare", "--net", "sh", "-c"),
                f'{WITH_AN_INTERFACE} && "$0" -c "$1" && exec "$0" -c "$2"',
                *(sys.executable, RAYS_OWN_CHOICE, LOCAL_DRIVER),
            ],
            cwd=REPO_ROOT,
            env={**os.environ, "HOME": str(home), "RAY_AUTH_MODE": "disabled"},  # overridden
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    try:
        lines = []
        while not lines or lines[-1] != "ready":
            line = driver.stdout.readline()
            assert line, f"the driver exited: {driver.wait(timeout=60)}, {log.read_text()}"
            lines.append(line.strip())
        assert f"address {INTERFACE}" in lines  # Ray's own choice: the interface
        listening = _listening(driver.pid)  # the driver: `exec` kept unshare's process id
        names = " ".join(owner for *_, owner in listening)
        assert "gcs_server" in names and "raylet" in names, listening
        assert [row for row in listening if not _on_loopback(row[0])] == []
        assert any(address == LOOPBACK for address, *_ in listening)
        gcs = [
            path for path, name in _namespace_processes(driver.pid).items() if name == "gcs_server"
        ]
        environment = (gcs[0] / "environ").read_bytes().split(b"\0")
        assert b"RAY_AUTH_MODE=token" in environment
        assert any(
            entry.startswith(b"RAY_AUTH_TOKEN=") and len(entry) > 40 for entry in environment
        )
        driver.communicate("\n", timeout=60)
        assert driver.returncode == 0, log.read_text()
        assert "the local Ray listens" not in log.read_text()
        assert not (home / ".ray").exists()  # the token is in Ray's environment only
    finally:
        _kill_tree(driver)


def test_a_local_ray_is_refused_where_ray_was_imported_before():
    import ray  # as a notebook or another library might: Ray has read its settings

    before = dict(os.environ)
    with pytest.raises(ClusterError, match="in a process of its own, before anything imports Ray"):
        RayExecutor(None, 1).__enter__()
    assert not ray.is_initialized()
    assert dict(os.environ) == {**before, "RAY_USAGE_STATS_ENABLED": "0"}
