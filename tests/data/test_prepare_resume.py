"""A prepare killed with SIGKILL mid-run, re-run, equals an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import REPO_ROOT

from actrec.data.prepare.dataset import prepare_dataset
from actrec.data.prepare.encode_video import PrepareSettings
from actrec.data.prepare.plan import PARTIAL_DIR, STATE_FILE
from actrec.data.sources import list_videos
from actrec.data.synthetic.config import SyntheticConfig
from actrec.data.synthetic.dataset import generate_synthetic_dataset

# Farneback at 256 px keeps each video slow enough (~0.1 s) to kill the run mid-way.
ARGUMENTS = ["--flow", "farneback", "--size", "256", "--shard-size-mb", "0.3", "--workers", "1"]
SETTINGS = PrepareSettings(frame_size="256", flow="farneback", shard_size_mb=0.3)


def _records(prepared) -> dict[str, tuple[str, str]]:
    manifest = json.loads((prepared / "manifest.json").read_text())
    return {video["id"]: (video["digest"], video["shard"]) for video in manifest["videos"]}


@pytest.mark.slow
def test_sigkill_mid_run_then_resume_gives_identical_records(tmp_path):
    root = tmp_path / "raw"
    generate_synthetic_dataset(
        root, SyntheticConfig(videos_per_class=4, num_frames=12, width=64, height=48)
    )
    killed = tmp_path / "killed"
    command = [
        sys.executable,
        "-m",
        "actrec_cli.main",
        "prepare",
        "synthetic",
        "--root",
        str(root),
        "--out",
        str(killed),
        *ARGUMENTS,
    ]
    process = subprocess.Popen(
        command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    state = killed / PARTIAL_DIR / STATE_FILE
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if state.exists() and len(state.read_text().splitlines()) >= 2:
            break
        time.sleep(0.02)
    assert process.poll() is None, "the run finished before it could be killed"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert not (killed / "manifest.json").exists()
    closed_lines = len(state.read_text().splitlines())
    assert closed_lines >= 2

    listing = list_videos("synthetic", root)
    resumed = prepare_dataset(listing, killed, SETTINGS, workers=1)
    assert resumed.resumed_videos >= 2  # finished videos were not redone
    reference = prepare_dataset(listing, tmp_path / "reference", SETTINGS, workers=1)
    assert reference.resumed_videos == 0
    assert _records(killed) == _records(tmp_path / "reference")
    assert len(_records(killed)) == 32
    shards = sorted(path.name for path in killed.glob("*.tfrecord"))
    assert shards == sorted(path.name for path in (tmp_path / "reference").glob("*.tfrecord"))
    assert len(shards) > 2
    for name in shards:
        assert (killed / name).read_bytes() == (tmp_path / "reference" / name).read_bytes()
    assert not (killed / PARTIAL_DIR).exists()
    assert not list(killed.glob(".*.tmp"))
