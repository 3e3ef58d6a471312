"""A prepare killed with SIGKILL mid-run, re-run, equals an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from repo_paths import REPO_ROOT

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


def _synthetic_root(tmp_path):
    root = tmp_path / "raw"
    generate_synthetic_dataset(
        root, SyntheticConfig(videos_per_class=4, num_frames=12, width=64, height=48)
    )
    return root


def _jester_root(tmp_path):
    """Jester's official layout: 32 folders of 12 JPEG frames (64x48, a moving square) in
    4 classes, all in the train list (the labels file: Jester's 27 names)."""
    import cv2
    import numpy as np

    from actrec.published.class_lists import published_class_names

    root = tmp_path / "jester"
    names = published_class_names("jester-mmaction2")
    (root / "20bn-jester-v1").mkdir(parents=True)
    (root / "jester-v1-labels.csv").write_text("\n".join(names) + "\n")
    lines = []
    for number in range(32):
        video_id = str(1000 + number)
        lines.append(f"{video_id};{names[number % 4]}")
        folder = root / "20bn-jester-v1" / video_id
        folder.mkdir()
        for index in range(12):
            frame = np.full((48, 64, 3), 8 * number, np.uint8)
            frame[16:32, 2 * index : 2 * index + 16] = 255
            assert cv2.imwrite(str(folder / f"{index + 1:05d}.jpg"), frame)
    (root / "jester-v1-train.csv").write_text("\n".join(lines) + "\n")
    (root / "jester-v1-validation.csv").write_text("")
    return root


@pytest.mark.slow
@pytest.mark.parametrize(
    ("dataset", "make_root"), [("synthetic", _synthetic_root), ("jester", _jester_root)]
)
def test_sigkill_mid_run_then_resume_gives_identical_records(tmp_path, dataset, make_root):
    root = make_root(tmp_path)
    killed = tmp_path / "killed"
    command = [
        sys.executable,
        "-m",
        "actrec_cli.main",
        "prepare",
        dataset,
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

    listing = list_videos(dataset, root)
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
