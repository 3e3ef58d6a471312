"""`actrec eval` on several workers (actrec.evaluation.parts): real worker processes of
`actrec launch -n 2` score as one worker does, for single streams and a fused pair under a
multi-view protocol; a killed evaluation resumes from its saved parts, on another number of
workers too; a worker that never comes is named, not waited for forever."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from actrec.cluster.strategy import ClusterInfo
from actrec.errors import RESTART_EXIT_CODE, ConfigError
from actrec.evaluation.evaluate import (
    default_eval_dir,
    evaluate_run,
    fuse_evaluations,
    load_evaluation,
)
from actrec.evaluation.parts import PARTS_DIR, EvaluationParts, part_size
from actrec.evaluation.protocols import resolve_protocol
from actrec.evaluation.reports import PER_CLASS_FILE, RESULTS_FILE
from actrec.evaluation.scores import VideoScores, save_video_scores

# 2 segments would do, but 2 clips x 3 crops make 6 views a video, and 5 views a forward
# pass make the batches of one worker and of two differ (and cut videos in two).
PROTOCOL = resolve_protocol("tsm-8x3", num_clips=2)
VIEW_BATCH = 5
TOLERANCE = 1e-5  # batch composition changes the float32 rounding, nothing more
METRICS = ("top1", "top5", "mean_class_accuracy")


@pytest.fixture(scope="module")
def runs(tiny_runs, tmp_path_factory) -> dict[str, Path]:
    """Copies of the session's tiny RGB and flow runs (8 test videos), so that the
    evaluations written into them stay this module's."""
    folder = tmp_path_factory.mktemp("worker-eval-runs")
    return {m: Path(shutil.copytree(tiny_runs[m], folder / m)) for m in ("rgb", "flow")}


@pytest.fixture(scope="module")
def one_worker(runs, tmp_path_factory):
    """The single-worker evaluations of both runs and their fusion (in this process)."""
    folder = tmp_path_factory.mktemp("one-worker")
    streams = [
        evaluate_run(runs[m], PROTOCOL, view_batch=VIEW_BATCH, out_dir=folder / m)
        for m in ("rgb", "flow")
    ]
    return {
        "rgb": streams[0],
        "flow": streams[1],
        "fused": fuse_evaluations(streams, out_dir=folder / "fused"),
    }


def assert_same_evaluation(folder: Path, expected) -> None:
    """The evaluation saved in `folder` is `expected`'s: same videos in the same order, same
    labels, scores within TOLERANCE, same metrics and per-class table."""
    found = load_evaluation(folder)
    assert found.scores.video_ids == expected.scores.video_ids
    np.testing.assert_array_equal(found.scores.labels, expected.scores.labels)
    np.testing.assert_array_equal(found.scores.num_views, expected.scores.num_views)
    np.testing.assert_allclose(found.scores.scores, expected.scores.scores, atol=TOLERANCE)
    results, expected_results = (
        json.loads((where / RESULTS_FILE).read_text()) for where in (folder, expected.out_dir)
    )
    for key in METRICS:
        assert results[key] == expected_results[key], key
    assert (folder / PER_CLASS_FILE).read_text() == (expected.out_dir / PER_CLASS_FILE).read_text()
    assert not (folder / PARTS_DIR).exists()  # the parts are removed once merged


def test_parts_cover_the_split_once_in_its_order_on_any_number_of_workers(tmp_path):
    for num_videos in (1, 7, 56, 3783, 20000):
        parts = EvaluationParts(tmp_path, num_videos, part_size(num_videos))
        assert parts.size <= 64 and parts.num_parts <= max(32, num_videos // 64 + 1)
        for num_workers in (1, 2, 3, 8):
            shares = [parts.share(worker, num_workers) for worker in range(num_workers)]
            owned = sorted(part for share in shares for part in share)
            assert owned == list(range(parts.num_parts))
            assert max(map(len, shares)) - min(map(len, shares)) <= 1
        rows = [video for part in range(parts.num_parts) for video in parts.rows(part)]
        assert rows == list(range(num_videos))


def test_a_damaged_part_is_named_with_the_fix(tmp_path):
    parts = EvaluationParts(tmp_path / "parts", 3, 2, {"split": "test"})
    scores = VideoScores(
        ("a", "b"),
        np.zeros(2, np.int64),
        np.zeros((2, 2)),
        ("x", "y"),
        np.ones(2, np.int64),
        "logits",
    )
    parts.save(0, scores)
    save_video_scores(scores, parts.path(1))  # two videos where part 1 has one
    with pytest.raises(ConfigError, match=r"part-00001-of-00002\.npz holds 2 videos.*delete"):
        parts.merged()
    parts.path(1).write_bytes(b"not a scores file")
    with pytest.raises(ConfigError, match=r"part-00001-of-00002\.npz.*delete it"):
        parts.merged()


def test_two_launched_workers_write_what_one_worker_writes(runs, one_worker):
    """One `actrec launch -n 2 -- actrec eval --fuse RGB FLOW`: both streams (each a
    single-stream evaluation shared by the workers) and their fusion."""
    actrec = [sys.executable, "-m", "actrec_cli.main"]
    command = [
        *actrec, "launch", "-n", "2", "--timeout", "300", "--",
        *actrec, "eval", "--fuse", str(runs["rgb"]), str(runs["flow"]),
        "--protocol", "tsm-8x3", "--clips", "2", "--batch-size", str(VIEW_BATCH),
    ]  # fmt: skip
    started = time.monotonic()
    launched = subprocess.run(command, capture_output=True, text=True, timeout=400)
    print(f"two-worker evaluation of two streams: {time.monotonic() - started:.1f} s")
    output = launched.stdout + launched.stderr
    assert launched.returncode == 0, output[-4000:]
    streams = {m: default_eval_dir(runs[m], "test", PROTOCOL) for m in ("rgb", "flow")}
    for modality, folder in streams.items():
        assert_same_evaluation(folder, one_worker[modality])
        assert json.loads((folder / RESULTS_FILE).read_text())["workers"] == 2
    assert_same_evaluation(streams["rgb"].parent / "fused-rgb-flow", one_worker["fused"])
    # Only the chief prints the tables; each worker reports its own share's progress.
    worker_lines = [line for line in output.splitlines() if line.startswith("[worker 1]")]
    assert worker_lines and not any("top-1" in line for line in worker_lines)
    assert any(line.startswith("[worker 0]") and "top-1" in line for line in output.splitlines())
    assert any("worker 1 of 2" in line for line in worker_lines)


class _Recorded:
    """A Progress that records messages and scored views, and stops (as a kill would) once
    `stop_after` videos are done."""

    def __init__(self, stop_after: int | None = None):
        self.stop_after, self.videos, self.views, self.messages = stop_after, 0, 0, []

    def start(self, description, total):
        pass

    def advance(self, amount=1, **counters):
        self.videos += amount
        self.views += counters.get("views", 0)
        if self.stop_after is not None and self.videos >= self.stop_after:
            raise KeyboardInterrupt

    def show(self, **values):
        pass

    def message(self, text):
        self.messages.append(text)

    def finish(self):
        pass


def test_a_missing_worker_is_named_and_a_killed_evaluation_resumes_on_one_worker(
    runs, one_worker, tmp_path
):
    """The chief of two whose peer never starts names it within --wait-timeout; the peer,
    started then, is killed after two of its four videos; the same evaluation on one worker
    then scores only the two videos no part holds and writes the one-worker results."""
    from actrec_cli.main import main

    out = tmp_path / "eval"
    workers = ["localhost:1", "localhost:2"]  # never contacted: evaluation opens no port
    tf_config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": 0}}
    options = f"--protocol tsm-8x3 --clips 2 --batch-size {VIEW_BATCH} --wait-timeout 1"
    started = time.monotonic()
    result = CliRunner().invoke(
        main,
        ["eval", str(runs["rgb"]), "--out", str(out), *options.split()],
        env={"TF_CONFIG": json.dumps(tf_config)},
    )
    assert time.monotonic() - started < 60
    assert result.exit_code == RESTART_EXIT_CODE, result.output
    text = " ".join(result.output.split())
    assert "worker 1 of 2 (parts 1, 3, 5, 7 of 8)" in text and "--wait-timeout" in text
    assert not (out / RESULTS_FILE).exists()
    # Worker 1 of 2 (parts 1, 3, 5, 7: one video each) stops after two of its videos.
    second_of_two = ClusterInfo(2, 1, False, "test")
    with pytest.raises(KeyboardInterrupt):
        evaluate_run(
            runs["rgb"], PROTOCOL, out_dir=out, view_batch=6, cluster=second_of_two,
            progress=_Recorded(stop_after=2),
        )  # fmt: skip
    (folder,) = (out / PARTS_DIR).iterdir()
    saved = sorted(path.name[5:10] for path in folder.glob("part-*"))
    assert saved == ["00000", "00001", "00002", "00003", "00004", "00006"]
    assert not (out / RESULTS_FILE).exists()
    # The same evaluation on one worker takes the saved parts as they are.
    progress = _Recorded()
    evaluation = evaluate_run(runs["rgb"], PROTOCOL, out_dir=out, progress=progress)
    assert any("reusing 6 of the 8 parts" in message for message in progress.messages)
    assert progress.videos == 8 and progress.views == 2 * PROTOCOL.num_views
    assert evaluation.results["workers"] == 1
    assert_same_evaluation(out, one_worker["rgb"])
