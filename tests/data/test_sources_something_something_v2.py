"""`actrec prepare something-something-v2`: the official JSON layout, WebM videos."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest
from tiny_recipe import TINY_RUN_SETTINGS

from actrec.data.prepare.dataset import prepare_dataset
from actrec.data.prepare.encode_video import PrepareSettings
from actrec.data.sources import list_videos
from actrec.progress import NullProgress
from actrec.published.class_lists import published_class_names

CLASSES = published_class_names("something-something-v2")
TEMPLATES = {
    "0": "Approaching [something] with your camera",
    "1": "Attaching [something] to [something]",
}
ARGUMENTS = [
    *("--flow", "dis", "--size", "32", "--workers", "1"),
    *("--shard-size-mb", "0.001", "--min-frames", "2"),
]
SETTINGS = PrepareSettings(frame_size="32", flow="dis", shard_size_mb=0.001, min_frames=2)


def write_webm(path, num_frames=5, shade=0):
    """A tiny VP8 WebM [num_frames, 24, 32] with a moving square."""
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"VP80"), 12, (32, 24))
    assert writer.isOpened()
    for index in range(num_frames):
        frame = np.full((24, 32, 3), shade, np.uint8)
        frame[8:16, 2 * index : 2 * index + 8] = 255
        writer.write(frame)
    writer.release()


@pytest.fixture
def ssv2_root(tmp_path):
    root = tmp_path / "ssv2"
    videos = root / "20bn-something-something-v2"
    videos.mkdir(parents=True)
    labels = {name: str(index) for index, name in enumerate(CLASSES)}
    (root / "something-something-v2-labels.json").write_text(json.dumps(labels))

    def entry(video_id, label):
        template = TEMPLATES.get(label, label)
        return {"id": video_id, "label": "x", "template": template, "placeholders": ["x"]}

    train = [entry("11", "0"), entry("12", "1"), entry("13", "0"), entry("14", "Juggling [it]")]
    validation = [entry("21", "1"), entry("22", "0")]
    test = [{"id": "31"}, {"id": "32"}]
    for name, items in (("train", train), ("validation", validation), ("test", test)):
        (root / f"something-something-v2-{name}.json").write_text(json.dumps(items))
    for shade, video_id in enumerate(("11", "12", "13", "14", "21", "31", "32")):  # 22 absent
        write_webm(videos / f"{video_id}.webm", shade=20 * shade)
    return root


def test_lists_classes_in_the_published_order_and_reports_bad_entries(ssv2_root):
    listing = list_videos("something-something-v2", ssv2_root)
    assert len(listing.classes) == 174
    assert listing.classes == CLASSES
    assert listing.counts_by_split() == {"train": 3, "val": 2, "test": 2}
    labels = {entry.video_id: entry.label for entry in listing.entries}
    assert labels == {"11": 0, "12": 1, "13": 0, "21": 1, "22": 0, "31": -1, "32": -1}
    assert any("id 14: 'Juggling [it]'" in warning for warning in listing.warnings)


def test_missing_labels_file_is_refused_naming_it(ssv2_root, tmp_path, cli_runner):
    (ssv2_root / "something-something-v2-labels.json").unlink()
    out = tmp_path / "prepared"
    result = cli_runner(
        "prepare", "something-something-v2", "--root", ssv2_root, "--out", out, *ARGUMENTS
    )
    assert result.exit_code != 0
    assert "something-something-v2-labels.json not found" in result.output
    assert "174 classes" in result.output
    assert not out.exists()


class StopAfter(NullProgress):
    """Interrupts a prepare after `count` videos (as Ctrl-C would)."""

    def __init__(self, count):
        self.left = count

    def advance(self, amount=1, **counters):
        self.left -= amount
        if self.left <= 0:
            raise KeyboardInterrupt


def test_prepare_reports_bad_entries_and_resumes_to_identical_bytes(
    ssv2_root, tmp_path, cli_runner
):
    whole = tmp_path / "whole"
    result = cli_runner(
        "prepare", "something-something-v2", "--root", ssv2_root, "--out", whole, *ARGUMENTS
    )
    assert result.exit_code == 0, result.output
    assert "Juggling [it]" in result.output  # the template not in the labels file
    manifest = json.loads((whole / "manifest.json").read_text())
    assert tuple(manifest["classes"]) == CLASSES
    prepared = {video["id"]: video["label"] for video in manifest["videos"] if video["shard"]}
    assert prepared == {"11": 0, "12": 1, "13": 0, "21": 1, "31": -1, "32": -1}
    report = json.loads((whole / "report.json").read_text())
    assert [(item["video_id"], item["reason"]) for item in report["skipped"]] == [("22", "missing")]

    listing = list_videos("something-something-v2", ssv2_root)
    resumed = tmp_path / "resumed"
    with pytest.raises(KeyboardInterrupt):
        prepare_dataset(listing, resumed, SETTINGS, 1, progress=StopAfter(2))
    assert not (resumed / "manifest.json").exists()
    assert prepare_dataset(listing, resumed, SETTINGS, 1).resumed_videos >= 1
    shards = sorted(path.name for path in whole.glob("*.tfrecord"))
    assert len(shards) > 1
    assert shards == sorted(path.name for path in resumed.glob("*.tfrecord"))
    for name in shards:
        assert (resumed / name).read_bytes() == (whole / name).read_bytes()


@pytest.mark.slow
def test_a_converted_ssv2_model_evaluates_with_its_174_classes_and_a_tsm_trains(
    ssv2_root, tmp_path, cli_runner
):
    """The done-when of SSv2: TSM's published Something-Something V2 layout (a reference
    checkpoint with random weights, tests/published) converted and evaluated on a prepared
    SSv2-layout set with its classifier kept, the classes in the source's order; a tiny TSM
    trains on the same set for two steps."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "published"))
    import torch_reference as reference  # torch needed

    prepared = tmp_path / "prepared"
    at_224 = [*ARGUMENTS[:2], "--size", "224", *ARGUMENTS[4:]]  # the model's crop fits
    result = cli_runner(
        "prepare", "something-something-v2", "--root", ssv2_root, "--out", prepared, *at_224
    )
    assert result.exit_code == 0, result.output
    model = reference.randomise_(reference.tsm_resnet(174, 8), seed=5)
    checkpoint = reference.save_tsm(model, tmp_path, dataset="somethingv2", epochs=45)
    run = tmp_path / "runs" / "tsm-ssv2"
    result = cli_runner("pretrained", "convert", checkpoint, "--out", run)
    assert result.exit_code == 0, result.output
    assert json.loads((run / "run.json").read_text())["classes"] == list(CLASSES)

    out = tmp_path / "eval"
    result = cli_runner("eval", run, "--data", prepared, "--split", "val", "--out", out)
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    assert results["num_videos"] == 1  # video 22 is absent
    import csv

    rows = list(csv.DictReader((out / "per_class.csv").open()))
    assert [row["class"] for row in rows] == list(CLASSES)  # the source's order

    arguments = ["train", "--recipe", "tsm-something-something-v2", "--data", prepared]
    arguments += ["--workdir", tmp_path / "trained"]
    for setting in [*TINY_RUN_SETTINGS, "model.weights=none", "train.batch_size=2"]:
        arguments += ["--set", setting]
    result = cli_runner(*arguments, "--set", "runtime.steps_per_epoch=2")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "trained" / "final.weights.h5").is_file()
