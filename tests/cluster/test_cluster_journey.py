"""docs/cluster.md's journey, as written (tests/journey_harness.py): the synthetic set prepared
by Ray tasks, a run trained by 2 workers (`actrec launch -n 2 -- actrec train`), and the same
run evaluated by 2 workers (`actrec launch -n 2 -- actrec eval`), each command a fresh process
of the installed console script, in a folder that holds only a small synthetic set (3 videos
a class at 64x48: `prepare` finds it in place of the default 24 a class). The test appends
only the `--set` options that make the training tiny (one step of the test network).

Every command runs in one network namespace with only loopback up (`unshare --net`, entered
with `nsenter`): the local Ray, the training's coordination service and the workers find one
another on 127.0.0.1, and nothing can leave the machine. Ray's session (its logs) goes to a
folder of the test (RAY_TMPDIR): the videos were encoded by Ray tasks, not the local pool."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from journey_harness import documented_commands, run_journey, settings
from tiny_recipe import TINY_RUN_SETTINGS

from actrec.data.synthetic.config import SyntheticConfig
from actrec.data.synthetic.dataset import generate_synthetic_dataset

pytestmark = [
    pytest.mark.slow,
    pytest.mark.recipe_scale,
    pytest.mark.skipif(
        os.geteuid() != 0 or not all(map(shutil.which, ("unshare", "nsenter", "ip"))),
        reason="the cluster journey runs in a network namespace: it needs root, unshare, "
        "nsenter and ip (iproute2)",
    ),
]

TINY_SET = SyntheticConfig(videos_per_class=3, num_frames=12, width=64, height=48)
TEST_VIDEOS = 8  # the lowest group of each of the 8 classes
VIDEOS = 24


@contextlib.contextmanager
def loopback_namespace() -> Iterator[int]:
    """A process holding a new network namespace whose only interface, loopback, is up;
    yields its id (enter with `nsenter --net=/proc/PID/ns/net`)."""
    holder = subprocess.Popen(
        ["unshare", "--net", "sh", "-c", "ip link set lo up && exec sleep 3600"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        # `sleep` runs once `ip link set lo up` has (exec keeps the process id).
        while Path(f"/proc/{holder.pid}/comm").read_text().strip() != "sleep":
            assert holder.poll() is None, f"no namespace: {holder.stderr.read().decode()}"
            assert time.monotonic() < deadline, "the namespace did not start"
            time.sleep(0.01)
        yield holder.pid
    finally:
        holder.kill()
        holder.wait()


def interfaces(pid: int) -> list[str]:
    """The network interfaces of process `pid`'s namespace."""
    lines = Path(f"/proc/{pid}/net/dev").read_text().splitlines()[2:]
    return [line.split(":")[0].strip() for line in lines]


def test_prepare_train_and_evaluate_on_two_workers_run_as_written(tmp_path):
    commands = documented_commands("cluster.md")
    assert [words[:3] for words in commands] == [
        ["actrec", "prepare", "synthetic"],
        ["actrec", "launch", "-n"],
        ["actrec", "launch", "-n"],
    ]
    generate_synthetic_dataset(tmp_path / "datasets/raw/synthetic", TINY_SET)
    ray_folder = Path(tempfile.mkdtemp(prefix="ar-", dir="/tmp"))  # short: Ray's sockets
    try:
        with loopback_namespace() as pid:
            assert os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")
            assert interfaces(pid) == ["lo"]
            steps = run_journey(
                commands,
                tmp_path,
                {"train": settings(*TINY_RUN_SETTINGS)},
                timeout=300,
                prefix=["nsenter", f"--net=/proc/{pid}/ns/net"],
                environment={"RAY_TMPDIR": str(ray_folder)},
            )
            assert interfaces(pid) == ["lo"]  # nothing added one while the journey ran
        encoded = [
            line
            for log in ray_folder.glob("ray/session_*/logs/worker-*.out")
            for line in log.read_text().splitlines()
            if line == ":task_name:_encode_on_node"
        ]
    finally:
        shutil.rmtree(ray_folder, ignore_errors=True)
    prepare, train, evaluate = (step.said for step in steps)

    # The set: every video encoded by a Ray task (a retry would add one), none skipped.
    assert len(encoded) >= VIDEOS, len(encoded)
    prepared = tmp_path / "datasets/prepared/synthetic"
    manifest = json.loads((prepared / "manifest.json").read_text())
    assert [video["status"] for video in manifest["videos"]] == ["ok"] * VIDEOS
    assert manifest["splits"]["test"]["videos"] == TEST_VIDEOS
    assert json.loads((prepared / "report.json").read_text())["num_skipped"] == 0
    assert f"{VIDEOS} videos in" in prepare and "prepared datasets/prepared/synthetic" in prepare

    # The run: trained by 2 workers, to its end.
    run = json.loads((tmp_path / "runs/two-workers/run.json").read_text())
    assert (run["status"], run["workers"], run["global_step"]) == ("finished", 2, 1)
    assert "[worker 1]" in train and "all 2 workers finished" in train

    # The evaluation: the test videos shared by 2 workers, the chief's results.
    out = tmp_path / "runs/two-workers/eval/test-tsm-8x3"
    results = json.loads((out / "results.json").read_text())
    assert results["workers"] == 2 and results["protocol"] == "tsm-8x3"
    assert results["num_videos"] == TEST_VIDEOS
    assert 0 <= results["top1"] <= 1
    assert not (out / ".actrec-parts").exists()  # merged, then deleted
    assert "worker 1 of 2" in evaluate and "all 2 workers finished" in evaluate
    assert f"{100 * results['top1']:.2f}" in evaluate  # the chief's table
