"""`actrec predict --timeline`: sliding windows of a long video, each the export's score of
the frames it covers, in memory that does not grow with the video."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from actrec.data.prepare.encode_video import VideoTask, encode_video
from actrec.data.synthetic.config import SYNTHETIC_CLASSES, SyntheticConfig
from actrec.data.synthetic.render import render_clip
from actrec.data.synthetic.video_writer import write_video
from actrec.errors import ConfigError
from actrec.predict.timeline import video_timeline, video_timelines, window_ranges
from actrec.predict.video_files import ExportedModel, predict_videos, record_inputs

FPS = 25.0


def test_windows_cover_every_frame_and_a_short_video_is_one_window():
    assert window_ranges(10, 4, 2) == [(0, 4), (2, 6), (4, 8), (6, 10)]
    # the last frame ends no regular window: a last window ends there
    assert window_ranges(11, 4, 2) == [(0, 4), (2, 6), (4, 8), (6, 10), (7, 11)]
    assert window_ranges(3, 4, 2) == [(0, 3)]
    assert window_ranges(4, 4, 3) == [(0, 4)]
    assert window_ranges(0, 4, 2) == []
    for frames, window, stride in ((50, 7, 3), (9, 3, 3), (10, 2, 1)):
        covered = {
            f for start, end in window_ranges(frames, window, stride) for f in range(start, end)
        }
        assert covered == set(range(frames))


def _probabilities(model: ExportedModel, video: Path, start: int, end: int) -> np.ndarray:
    """The export's probabilities [K] of frames [start, end) of `video`, taken from its
    prepared record (what `actrec prepare` stores)."""
    result = encode_video(VideoTask(0, video.stem, str(video), -1, "", "t"), model.settings)
    inputs = record_inputs(
        result.records, "frames" in model.input_names, "flow" in model.input_names
    )
    window = {}
    if "frames" in inputs:
        window["frames"] = inputs["frames"][None, start:end]
    if "flow" in inputs:
        window["flow"] = inputs["flow"][None, start : end - 1]
    return model.probabilities(window)[0]


def _top_probabilities(window) -> list[float]:
    return [probability for _, probability in window.top_k]


def test_each_window_is_the_export_on_the_frames_it_covers(tiny_runs, tiny_exports):
    """Frames and flow are read as a stream, yet every window scores as the export scores
    those frames of the prepared record; a window as long as the video is `predict`."""
    video = sorted((tiny_runs["raw"] / "ZoomIn").glob("*.avi"))[0]  # 12 frames
    model = ExportedModel(tiny_exports["two-stream"])
    timeline = video_timeline(model, video, window_seconds=5 / FPS, stride_seconds=3 / FPS)
    assert [(w.start_frame, w.end_frame) for w in timeline.windows] == window_ranges(12, 5, 3)
    assert timeline.note is None and timeline.fps == FPS
    for window in timeline.windows:
        expected = np.sort(_probabilities(model, video, window.start_frame, window.end_frame))
        np.testing.assert_allclose(_top_probabilities(window), expected[::-1][:5], atol=1e-5)
    assert timeline.windows[1].start == pytest.approx(0.12) and timeline.windows[1].end == 0.32

    whole = predict_videos([video], tiny_exports["two-stream"])[0]
    longer = video_timeline(model, video, window_seconds=2.0)
    assert [(w.start_frame, w.end_frame) for w in longer.windows] == [(0, 12)]
    assert "shorter than one window (2.00 s): one row for the whole video" in longer.note
    assert longer.windows[0].top_k[0][0] == whole.top_k[0][0]
    np.testing.assert_allclose(
        _top_probabilities(longer.windows[0]), [p for _, p in whole.top_k], atol=1e-6
    )


def test_timeline_command_prints_writes_csv_and_json(tiny_runs, tiny_exports, tmp_path, cli_runner):
    videos = sorted((tiny_runs["raw"] / "MoveUp").glob("*.avi"))[:2]
    missing = tmp_path / "missing.avi"
    table = tmp_path / "tables" / "new" / "timeline.csv"  # its folders made
    arguments = ["predict", *videos, missing, "--model", tiny_exports["rgb"], "--timeline"]
    arguments += ["--window", "0.4", "--stride", "0.2", "--top-k", "2", "--csv", table]
    result = cli_runner(*arguments)
    assert result.exit_code == 1  # one video could not be read
    assert f"cannot read {missing}: no such file" in result.stderr
    assert "1 of 3 videos could not be read" in result.stderr
    assert (
        result.stdout.count("start s") == 2
        and "(2 windows of 0.40 s every 0.20 s)" in result.stdout
    )
    rows = list(csv.DictReader(table.open()))
    assert [(row["video"], row["start"], row["end"]) for row in rows] == [
        (str(video), start, end)
        for video in videos
        for start, end in (("0.000", "0.400"), ("0.080", "0.480"))
    ]
    assert all(row["class_1"] in SYNTHETIC_CLASSES and row["class_2"] for row in rows)
    assert all(float(row["probability_1"]) >= float(row["probability_2"]) for row in rows)

    result = cli_runner(
        "predict", videos[0], "--model", tiny_exports["rgb"], "--timeline", "--json"
    )
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)
    assert entry["window"] == 2.0 and entry["error"] is None  # the default, > 12 frames
    assert "shorter than one window" in entry["note"] and len(entry["windows"]) == 1
    assert entry["windows"][0]["start"] == 0.0 and entry["windows"][0]["end"] == 0.48


def test_timeline_rejects_bad_options(tiny_runs, tiny_exports, cli_runner):
    video = sorted((tiny_runs["raw"] / "MoveUp").glob("*.avi"))[0]
    model = tiny_exports["rgb"]
    for options, message in (
        (["--stride", "1"], "--stride needs --timeline"),
        (["--csv", "out.csv"], "--csv needs --timeline"),
        (["--timeline", "--window", "0"], "--window 0.0 is not valid"),
        (["--timeline", "--stride", "-1"], "--stride -1.0 is not valid"),
    ):
        result = cli_runner("predict", video, "--model", model, *options)
        assert result.exit_code != 0 and message in result.output, (options, result.output)
    with pytest.raises(ConfigError, match="positive number of seconds"):
        video_timelines([video], model, window_seconds=-2)


# --- a long video of known classes, through the quickstart's export -------------------------

CLIP_FRAMES = 40  # 1.6 s: the objects stay in the frame
WINDOW, STRIDE = 24, 8  # the training clips' 24 frames, every 8 frames: 3 inside each clip
# The long video's repetitions of 8 clips: 5 (64 s) hold the memory bound's margin (the whole
# video kept would add ~125 MB against the 50 MB allowed) with half the video 10 made (issue 37).
REPEATS = 5


def _clips_video(path: Path, clips_per_class: int, repeats: int) -> list[tuple[int, int, str]]:
    """Writes `clips_per_class` clips of each class (classes in turn), `repeats` times over;
    returns the clips' (start frame, end frame, class)."""
    config = SyntheticConfig(seed=2024, num_frames=CLIP_FRAMES)
    clips, names = [], []
    for number in range(clips_per_class):
        for index, name in enumerate(SYNTHETIC_CLASSES):
            clips.append(
                render_clip(name, np.random.default_rng([config.seed, index, number]), config)
            )
            names.append(name)
    write_video(path, np.concatenate(clips * repeats), FPS)
    return [
        (number * CLIP_FRAMES, (number + 1) * CLIP_FRAMES, names[number % len(names)])
        for number in range(len(clips) * repeats)
    ]


MEASURE_TIMELINE = """
import json, sys
from actrec.cluster.optional_imports import decline_optional_imports
decline_optional_imports()  # as in `actrec predict --timeline`'s process
from actrec.predict.video_files import ExportedModel
from actrec.predict.timeline import video_timeline
export, warm_up, video, window, stride = sys.argv[1:]


def status(key):
    line = next(l for l in open("/proc/self/status") if l.startswith(key + ":"))
    return int(line.split()[1])  # KiB


model = ExportedModel(export)
video_timeline(model, warm_up, float(window), float(stride))  # TensorFlow's pools warmed
open("/proc/self/clear_refs", "w").write("5")  # resets the peak (VmHWM) to the current RSS
before = status("VmRSS")
timeline = video_timeline(model, video, float(window), float(stride), top_k=1)
print(json.dumps({"timeline": timeline.to_dict(), "peak": status("VmHWM"), "before": before}))
"""


def _timeline_with_peak_memory(video: Path, warm_up: Path, export: Path) -> tuple[dict, int, int]:
    """(the timeline as JSON, peak resident memory in KiB while it was made, and that peak
    less the memory before it) in a fresh process, after one warm-up timeline."""
    arguments = [str(export), str(warm_up), str(video), str(WINDOW / FPS), str(STRIDE / FPS)]
    result = subprocess.run(
        [sys.executable, "-c", MEASURE_TIMELINE, *arguments], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-3000:]
    measured = json.loads(result.stdout.strip().splitlines()[-1])
    return measured["timeline"], measured["peak"], measured["peak"] - measured["before"]


def _inside_clip_accuracy(timeline: dict, clips: list[tuple[int, int, str]]) -> float:
    """Share of the windows that lie inside one clip that get that clip's class."""
    correct = total = 0
    for window in timeline["windows"]:
        start, end = round(window["start"] * FPS), round(window["end"] * FPS)
        for clip_start, clip_end, name in clips:
            if clip_start <= start and end <= clip_end:
                total += 1
                correct += window["top_k"][0]["class"] == name
    assert total == 3 * len(clips), total  # starts 0, 8, 16 of each 40-frame clip
    return correct / total


@pytest.mark.slow
def test_timeline_of_a_long_video_finds_each_clips_class_in_constant_memory(
    synthetic_quickstart_export, tmp_path
):
    """16 clips (2 of each class, 26 s): >= 90 % of the windows inside a clip name its
    class. Its first 8 clips 5 times over (64 s): every repetition gets the first one's
    classes, the long video's peak memory is within 1.2x of the short one's, and it grows
    by at most 50 MB more (the whole long video at the prepared size would add ~125 MB).
    Each is measured in its own process after a warm-up timeline of those 8 clips once."""
    clips = _clips_video(tmp_path / "short.avi", clips_per_class=2, repeats=1)
    _clips_video(tmp_path / "long.avi", clips_per_class=1, repeats=REPEATS)
    _clips_video(tmp_path / "warm-up.avi", clips_per_class=1, repeats=1)
    export = synthetic_quickstart_export
    short, short_peak, short_growth = _timeline_with_peak_memory(
        tmp_path / "short.avi", tmp_path / "warm-up.avi", export
    )
    long, long_peak, long_growth = _timeline_with_peak_memory(
        tmp_path / "long.avi", tmp_path / "warm-up.avi", export
    )
    accuracy = _inside_clip_accuracy(short, clips)
    print(
        f"timeline inside-clip accuracy {accuracy:.3f}; peak memory {short_peak} / "
        f"{long_peak} KiB, growth {short_growth} / {long_growth} KiB"
    )
    assert accuracy >= 0.9
    period = 8 * CLIP_FRAMES // STRIDE  # windows per repetition
    classes = [window["top_k"][0]["class"] for window in long["windows"]]
    assert len(classes) == len(window_ranges(8 * CLIP_FRAMES * REPEATS, WINDOW, STRIDE))
    inside = (8 * CLIP_FRAMES - WINDOW) // STRIDE + 1  # windows within one repetition
    first = [window["top_k"][0]["class"] for window in short["windows"][:inside]]
    for repetition in range(REPEATS):  # the same frames: the same classes as the short video's
        start = repetition * period
        assert classes[start : start + inside] == first, repetition
    assert long_peak <= 1.2 * short_peak, (short_peak, long_peak)
    # The discriminating bound: the process holds ~1-1.7 GB before (TensorFlow and the
    # model), so 1.2x alone would allow it; the long video's frames, flow and JPEGs would
    # add ~125 MB.
    assert long_growth <= short_growth + 50 * 1024, (short_growth, long_growth)
