"""Frame folders: a folder of images read as one video, in `prepare folder` too."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from tiny_videos import write_tiny_video

from actrec.data.format.frame_folder import iter_folder_frames, iter_frames
from actrec.data.sources import list_videos
from actrec.errors import VideoReadError


def write_frames(folder, names):
    """Frames [24, 32, 3] whose blue value is 10 x their position in `names`."""
    folder.mkdir(parents=True, exist_ok=True)
    for index, name in enumerate(names):
        assert cv2.imwrite(str(folder / name), np.full((24, 32, 3), (10 * index, 0, 0), np.uint8))


def test_frames_come_in_file_name_order_as_the_video_reader_gives_them(tmp_path):
    write_frames(tmp_path / "clip", ["frame_01.png", "frame_02.png", "frame_03.png"])
    frames = list(iter_frames(tmp_path / "clip"))
    assert [frame.shape for frame in frames] == [(24, 32, 3)] * 3
    assert [int(frame[0, 0, 2]) for frame in frames] == [0, 10, 20]  # RGB: blue last
    bgr = list(iter_folder_frames(tmp_path / "clip", channel_order="bgr"))
    assert [int(frame[0, 0, 0]) for frame in bgr] == [0, 10, 20]


def test_frames_resample_from_the_stated_rate(tmp_path):
    write_frames(tmp_path / "clip", [f"{number:05d}.png" for number in range(1, 13)])
    frames = list(iter_folder_frames(tmp_path / "clip", fps=6, source_fps=12))
    assert [int(frame[0, 0, 2]) for frame in frames] == [0, 20, 40, 60, 80, 100]


def test_a_gap_in_the_numbering_names_the_folder_and_frame(tmp_path):
    write_frames(tmp_path / "clip", ["00001.jpg", "00002.jpg", "00005.jpg"])
    with pytest.raises(VideoReadError) as error:
        list(iter_frames(tmp_path / "clip"))
    assert error.value.reason == "frame-gap"
    assert "clip: 00005.jpg follows frame 2" in str(error.value)


def test_prepare_folder_lists_a_frame_folder_as_one_video_and_warns_of_imbalance(
    tmp_path, cli_runner
):
    root = tmp_path / "raw"
    for index in range(11):
        write_frames(root / "wave" / f"take{index:02d}", ["1.jpg", "2.jpg"])
    write_tiny_video(root / "clap" / "only.mp4", num_frames=3)
    listing = list_videos("folder", root)
    wave_ids = sorted(entry.video_id for entry in listing.entries if entry.label == 1)
    assert wave_ids == [f"wave/take{index:02d}" for index in range(11)]
    result = cli_runner("prepare", "folder", "--root", root, "--out", tmp_path / "out", "--dry-run")
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "11 video(s) are frame folders" in output
    assert "frames in file-name order" in output
    assert (
        "the largest, 'wave', has 11 videos, more than 10x the smallest, 'clap', with 1" in output
    )
    assert "wave" in output and "clap" in output  # the per-class counts


def test_balanced_enough_classes_give_no_imbalance_warning(tmp_path):
    root = tmp_path / "raw"
    for index in range(10):
        write_frames(root / "wave" / f"take{index}", ["1.jpg", "2.jpg"])
    write_frames(root / "clap" / "take0", ["1.jpg", "2.jpg"])
    warnings = list_videos("folder", root).warnings
    assert not any("imbalanced" in warning for warning in warnings)
