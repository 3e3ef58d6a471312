"""`actrec prepare jester`: the official CSV layout, one folder of JPEG frames per video."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest

from actrec.data.sources import list_videos
from actrec.published.class_lists import published_class_names

LABELS_FILE_ORDER = published_class_names("jester-mmaction2")  # jester-v1-labels.csv's lines
ARGUMENTS = [
    *("--flow", "dis", "--size", "32", "--workers", "1"),
    *("--shard-size-mb", "0.001", "--min-frames", "2"),
]


def write_frames(folder, numbers=(1, 2, 3, 4), shade=0):
    """JPEG frames folder/00001.jpg, ... [24, 32, 3] of a moving square."""
    folder.mkdir(parents=True)
    for index, number in enumerate(numbers):
        frame = np.full((24, 32, 3), shade, np.uint8)
        frame[8:16, 2 * index : 2 * index + 8] = 255
        assert cv2.imwrite(str(folder / f"{number:05d}.jpg"), frame)


@pytest.fixture
def jester_root(tmp_path):
    root = tmp_path / "jester"
    frames = root / "20bn-jester-v1"
    frames.mkdir(parents=True)
    (root / "jester-v1-labels.csv").write_text("\n".join(LABELS_FILE_ORDER) + "\n")
    first, second = LABELS_FILE_ORDER[0], LABELS_FILE_ORDER[5]
    (root / "jester-v1-train.csv").write_text(
        f"101;{first}\n102;{second}\n103;{first}\n104;Waving both arms\n"
    )
    (root / "jester-v1-validation.csv").write_text(f"201;{second}\n202;{first}\n")
    (root / "jester-v1-test.csv").write_text("301\n")
    for shade, video_id in enumerate(("101", "102", "201", "301")):  # 202 absent
        write_frames(frames / video_id, shade=30 * shade)
    write_frames(frames / "103", numbers=(1, 2, 4, 5))  # a gap: 00003.jpg is missing
    return root


def test_lists_classes_in_the_labels_file_order(jester_root):
    listing = list_videos("jester", jester_root)
    assert listing.classes == LABELS_FILE_ORDER
    assert len(listing.classes) == 27
    assert listing.counts_by_split() == {"train": 3, "val": 2, "test": 1}
    labels = {entry.video_id: entry.label for entry in listing.entries}
    assert labels == {"101": 0, "102": 5, "103": 0, "201": 5, "202": 0, "301": -1}
    assert any("id 104: 'Waving both arms'" in warning for warning in listing.warnings)


def test_prepare_reads_frames_and_reports_each_bad_entry(jester_root, tmp_path, cli_runner):
    out = tmp_path / "prepared"
    result = cli_runner("prepare", "jester", "--root", jester_root, "--out", out, *ARGUMENTS)
    assert result.exit_code == 0, result.output
    assert "Waving both arms" in result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert tuple(manifest["classes"]) == LABELS_FILE_ORDER
    prepared = {video["id"]: video["frames"] for video in manifest["videos"] if video["shard"]}
    assert prepared == {"101": 4, "102": 4, "201": 4, "301": 4}
    report = json.loads((out / "report.json").read_text())
    skipped = {item["video_id"]: (item["reason"], item["detail"]) for item in report["skipped"]}
    assert set(skipped) == {"103", "202"}
    assert skipped["202"][0] == "missing"
    assert skipped["103"][0] == "frame-gap"
    assert "00004.jpg follows frame 2" in skipped["103"][1]


def test_missing_labels_file_is_refused_naming_it(jester_root, tmp_path, cli_runner):
    (jester_root / "jester-v1-labels.csv").unlink()
    result = cli_runner("prepare", "jester", "--root", jester_root, "--out", tmp_path / "out")
    assert result.exit_code != 0
    assert "jester-v1-labels.csv not found" in result.output
    assert "one gesture name per line" in result.output
    assert not (tmp_path / "out").exists()
