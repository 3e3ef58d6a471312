"""`actrec predict --annotate OUT`: the video written with the top-k drawn on each frame (a
file, --timeline, --stream from a file and from a capture URL, the camera's code path), the
--timeline strip, and a bad OUT refused before TensorFlow is imported, nothing written."""

from __future__ import annotations

import json
import subprocess
import sys

import cv2
import numpy as np
import pytest

from actrec.predict.annotated_video import write_video_atomic
from actrec.predict.annotation import (
    BOX_OPACITY,
    annotated_frame,
    class_colour,
    overlay_rectangle,
)
from actrec.predict.stream import StreamingModel, stream_predictions, streamed_frames
from actrec.predict.timeline import Timeline, TimelineWindow, covering_windows
from actrec.predict.timeline_strip import (
    AXIS_HEIGHT,
    BAND_HEIGHT,
    LEGEND_ROW_HEIGHT,
    STRIP_WIDTH,
    strip_height,
    timeline_strip,
)


def _frames(path) -> list[np.ndarray]:
    capture = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(frame)
    capture.release()
    return frames


def _classes(export) -> list[str]:
    return json.loads((export / "actrec.json").read_text())["classes"]


def _assert_annotated(written: list[np.ndarray], source: list[np.ndarray], rows: int) -> None:
    """Same count and size; the overlay box darkened (the text aside), the rest kept (up to
    the codec's error)."""
    assert len(written) == len(source) > 0
    assert {frame.shape for frame in written} == {source[0].shape}
    x0, y0, x1, y1 = overlay_rectangle(source[0].shape, [("x" * 12, 0.5)] * rows)
    below = (slice(y1 + 2, None), slice(None))  # clear of the box (and its codec blur)
    for frame, original in zip(written, source, strict=True):
        box, original_box = frame[y0:y1, x0:x1].astype(float), original[y0:y1, x0:x1]
        darker = box < original_box.astype(float) - 10  # the 60 % black fill
        assert darker.mean() > 0.3
        assert (box > 200).any()  # white text
        if source[0].shape[0] > y1 + 6:
            difference = np.abs(frame[below].astype(float) - original[below])
            assert difference.mean() < 12


def test_the_overlay_is_a_blended_box_with_a_swatch_and_text_and_nothing_else():
    frame = np.full((120, 160, 3), 100, np.uint8)
    top_k = [("B", 0.7), ("A", 0.2)]
    out = annotated_frame(frame, top_k, ["A", "B"], "1.00 s")
    assert out.shape == frame.shape and frame.max() == 100  # a copy
    x0, y0, x1, y1 = overlay_rectangle(frame.shape, top_k, "1.00 s")
    assert 0 < x0 < x1 <= 160 and 0 < y0 < y1 < 120
    outside = np.ones(frame.shape[:2], bool)
    outside[y0:y1, x0:x1] = False
    assert (out[outside] == 100).all()
    # the box's fill: 40 % of the frame (black at BOX_OPACITY), on its last row (no text)
    assert BOX_OPACITY == 0.6 and (out[y1 - 1, x0:x1] == 40).all()
    box = out[y0:y1, x0:x1].reshape(-1, 3)
    assert (box == 255).all(axis=1).any()  # the text
    for index in (0, 1):  # each class's swatch in its own colour
        assert (box == class_colour(index)).all(axis=1).sum() >= 9
    assert class_colour(0) != class_colour(1)


def test_the_strip_has_a_band_per_class_over_time_and_a_legend_row_each():
    # 4 s at 10 fps: windows of 1 s every 0.5 s; B in the middle
    top = ["A", "A", "B", "B", "A", "A", "A"]
    windows = [
        TimelineWindow(5 * i, 5 * i + 10, 10.0, ((name, 0.9),)) for i, name in enumerate(top)
    ]
    strip = timeline_strip(Timeline("v.mp4", 10.0, 10, 5, windows), ["C", "B", "A"])
    assert strip.shape == (BAND_HEIGHT + AXIS_HEIGHT + 2 * LEGEND_ROW_HEIGHT, STRIP_WIDTH, 3)
    assert strip_height(2) == strip.shape[0]
    band = strip[BAND_HEIGHT // 2]  # [STRIP_WIDTH, 3]; a column is 4 / 960 s
    a, b = class_colour(2), class_colour(1)
    # nearest centre: window 2 (1-2 s) from 1.25 s, window 3 (1.5-2.5 s) until 2.25 s
    assert (band[: int(1.25 / 4 * STRIP_WIDTH)] == a).all()
    assert (band[int(1.25 / 4 * STRIP_WIDTH) + 1 : int(2.25 / 4 * STRIP_WIDTH)] == b).all()
    assert (band[int(2.25 / 4 * STRIP_WIDTH) + 1 :] == a).all()
    for row, colour in enumerate((a, b)):  # the legend, in order of first appearance
        swatch = strip[BAND_HEIGHT + AXIS_HEIGHT + row * LEGEND_ROW_HEIGHT + 10, 14]
        assert tuple(swatch) == colour


def test_predict_annotate_writes_each_frame_with_the_videos_top_k(
    tiny_runs, tiny_exports, tmp_path, cli_runner
):
    video = sorted((tiny_runs["raw"] / "MoveUp").glob("*.avi"))[0]  # 12 frames, 64x48
    out = tmp_path / "new" / "folders" / "annotated.mp4"
    arguments = ["predict", video, "--model", tiny_exports["rgb"], "--top-k", "1"]
    result = cli_runner(*arguments, "--annotate", out)
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in result.stderr
    _assert_annotated(_frames(out), _frames(video), rows=1)
    assert sorted(p.name for p in out.parent.iterdir()) == ["annotated.mp4"]  # no temporary

    # A video that cannot be read: reported, nothing written, no folder made.
    broken = tmp_path / "broken.avi"
    broken.write_bytes(b"not a video")
    result = cli_runner(*arguments[:1], broken, *arguments[2:], "--annotate", tmp_path / "b/x.mp4")
    assert result.exit_code == 1 and "cannot read" in result.stderr
    assert not (tmp_path / "b").exists()


def test_timeline_annotate_draws_each_windows_top_k_and_writes_the_strip(
    tiny_runs, tiny_exports, tmp_path, cli_runner
):
    # Two classes' videos one after the other (24 frames), so the windows may differ.
    source = [*_frames(sorted((tiny_runs["raw"] / "MoveUp").glob("*.avi"))[0])]
    source += _frames(sorted((tiny_runs["raw"] / "ZoomIn").glob("*.avi"))[0])
    video = tmp_path / "long.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), 25.0, (64, 48))
    for frame in source:
        writer.write(frame)
    writer.release()
    source = _frames(video)
    export = tiny_exports["rgb"]
    out = tmp_path / "annotated.avi"
    arguments = ["predict", video, "--model", export, "--timeline", "--window", "0.24"]
    result = cli_runner(*arguments, "--json", "--top-k", "1", "--annotate", out)
    assert result.exit_code == 0, result.output
    _assert_annotated(_frames(out), source, rows=2)  # the window's span, then its top-1

    strip = cv2.imread(str(tmp_path / "annotated.timeline.png"))
    windows = json.loads(result.stdout)[0]["windows"]
    top = [window["top_k"][0]["class"] for window in windows]
    shown = list(dict.fromkeys(top))
    assert strip.shape == (strip_height(len(shown)), STRIP_WIDTH, 3)
    classes = _classes(export)
    windows = [
        TimelineWindow(round(w["start"] * 25), round(w["end"] * 25), 25.0, ()) for w in windows
    ]
    duration = windows[-1].end
    for index, window in enumerate(windows):  # each window's centre column: its class's colour
        column = int((window.start + window.end) / 2 / duration * STRIP_WIDTH)
        if (
            covering_windows(windows, np.array([(column + 0.5) / STRIP_WIDTH * duration]))[0]
            == index
        ):
            assert tuple(strip[BAND_HEIGHT // 2, column]) == class_colour(classes.index(top[index]))
    band_colours = {tuple(pixel) for pixel in strip[BAND_HEIGHT // 2]}
    assert band_colours == {class_colour(classes.index(name)) for name in shown}
    # the legend: one swatch per class shown, in its colour
    for row, name in enumerate(shown):
        top_y = BAND_HEIGHT + AXIS_HEIGHT + row * LEGEND_ROW_HEIGHT
        assert tuple(strip[top_y + 10, 14]) == class_colour(classes.index(name))


def test_stream_annotate_draws_the_running_prediction_on_every_frame_read(
    tiny_online, tiny_runs, tmp_path, cli_runner
):
    video = sorted((tiny_runs["raw"] / "MoveLeft").glob("*.avi"))[0]  # 12 frames at 25 fps
    source = _frames(video)
    export = tiny_online["export"]
    # a file, and the same file as a capture URL: the camera's code path (cv2.VideoCapture)
    for given, out in ((video, tmp_path / "file.mp4"), (f"file://{video}", tmp_path / "url.mp4")):
        arguments = ["predict", given, "--model", export, "--stream", "--every", "2"]
        result = cli_runner(*arguments, "--top-k", "2", "--annotate", out)
        assert result.exit_code == 0, result.output
        assert len(result.stdout.splitlines()) == 6  # a line per fed frame, as without it
        assert f"wrote {out} (12 frames)" in result.stderr
        _assert_annotated(_frames(out), source, rows=3)  # the time, then the top-2

    # Each frame read carries the running prediction of the last frame fed.
    model = StreamingModel(export)
    items = list(streamed_frames(model, str(video), every=2, top_k=2))
    assert [item.fed for item in items] == [index % 2 == 0 for index in range(12)]
    assert all(item.step is items[index - index % 2].step for index, item in enumerate(items))
    model.reset()
    assert [item.step for item in items if item.fed] == list(
        stream_predictions(model, str(video), every=2, top_k=2)
    )


def test_ctrl_c_ends_a_kept_video_and_discards_any_other(tmp_path):
    def frames():
        for value in range(3):
            yield np.full((32, 48, 3), 60 * value, np.uint8)
        raise KeyboardInterrupt

    out = tmp_path / "camera.avi"
    assert write_video_atomic(out, frames(), 0.0, keep_on_interrupt=True) == (3, True)
    means = [frame.mean() for frame in _frames(out)]  # MJPG: a few levels off
    np.testing.assert_allclose(means, [0, 60, 120], atol=4)
    with pytest.raises(KeyboardInterrupt):
        write_video_atomic(tmp_path / "file.avi", frames(), 25.0)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["camera.avi"]


_REFUSALS = """
import json, sys
from click.testing import CliRunner
from actrec_cli.main import main

answers = []
for arguments in json.loads(sys.argv[1]):
    result = CliRunner().invoke(main, arguments)
    answers.append([result.exit_code, result.stderr,
                    sorted(m for m in ("tensorflow", "keras", "cv2") if m in sys.modules)])
print(json.dumps(answers))
"""


def test_a_bad_annotate_path_is_refused_before_tensorflow_and_nothing_is_written(
    tiny_runs, tiny_exports, tmp_path
):
    video = str(sorted((tiny_runs["raw"] / "MoveUp").glob("*.avi"))[0])
    export = str(tiny_exports["rgb"])
    (tmp_path / "a-file").write_text("")
    (tmp_path / "folder.mp4").mkdir()
    base = ["predict", video, "--model", export, "--annotate"]
    usages = [
        ([*base, str(tmp_path / "new" / "out.gif")], "not a video file name"),
        ([*base, str(tmp_path / "a-file" / "out.mp4")], "is a file, not a folder"),
        ([*base, str(tmp_path / "folder.mp4")], "is a folder"),
        ([*base, video], "is the source video itself"),
        (["predict", video, video, "--model", export, "--annotate", "x.mp4"], "one VIDEO"),
    ]
    before = sorted(tmp_path.rglob("*"))
    answers = json.loads(
        subprocess.run(
            [sys.executable, "-c", _REFUSALS, json.dumps([usage for usage, _ in usages])],
            capture_output=True,
            text=True,
            check=True,
            cwd=tmp_path,
        ).stdout
    )
    for (usage, said), (exit_code, stderr, heavy) in zip(usages, answers, strict=True):
        assert exit_code != 0 and said in stderr and len(stderr.splitlines()) == 1, (usage, stderr)
        assert "--annotate" in stderr or "VIDEO" in stderr
        assert heavy == [], usage  # answered before TensorFlow (and OpenCV) is imported
    assert sorted(tmp_path.rglob("*")) == before
