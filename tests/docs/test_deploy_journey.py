"""docs/deploy.md's road, as written, in an empty folder, a fresh process a command
(tests/journey_harness.py): a published Kinetics TSM (a reference checkpoint written here in
its published layout, with random weights, stands for the download) converted, fine-tuned
online on a folder of tiny videos, evaluated, exported as a streaming int8 TFLite, and
streamed through `predict --stream --annotate`. The test appends only the `--set` options
that make the training tiny."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import cv2
import pytest
from journey_harness import documented_commands, run_journey, settings
from tiny_videos import write_tiny_video

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "published"))

CLASSES = ("Clapping", "Jumping", "Waving")
TINY_TRAINING = settings(
    "data.crop_size=32",
    "data.scale_size=32",
    "data.num_segments=2",
    "train.batch_size=2",
    "train.epochs=1",
    "runtime.steps_per_epoch=1",
)


@pytest.mark.slow
def test_the_road_to_a_phone_and_a_webcam_runs_as_written(tmp_path):
    import torch_reference as reference  # tests/published: torch needed

    commands = documented_commands("deploy.md")
    assert [words[:2] for words in commands] == [
        ["actrec", "pretrained"],
        ["actrec", "prepare"],
        ["actrec", "train"],
        ["actrec", "eval"],
        ["actrec", "export"],
        ["actrec", "predict"],
    ]
    model = reference.randomise_(reference.tsm_resnet(400, 8), seed=3)
    checkpoint = reference.save_tsm(model, tmp_path)
    assert checkpoint.name == commands[0][3]  # the documented file name
    for label, name in enumerate(CLASSES):
        for index in range(1, 11):
            path = tmp_path / "datasets/raw/my-videos" / name / f"clip{index:02d}.mp4"
            write_tiny_video(path, num_frames=16, seed=100 * label + index)

    steps = run_journey(commands, tmp_path, {"train": TINY_TRAINING})
    convert, _, train, evaluate, export, predict = (step.said for step in steps)

    assert "kinetics400" in convert
    assert (
        "model.shift_direction: online (the source trained with bidirectional): the shift "
        "becomes online" in train
    )
    assert "warning: model.shift_direction" not in train
    results = json.loads(
        next((tmp_path / "runs/my-videos-online/eval").glob("*/results.json")).read_text()
    )
    assert results["num_videos"] == 6  # 20 % of 10 videos a class
    assert f"{100 * results['top1']:.1f}" in evaluate

    phone = tmp_path / "models/my-videos-phone"
    metadata = json.loads((phone / "actrec.json").read_text())
    assert metadata["streaming"]["num_segments"] == 2
    assert (phone / "model.tflite").is_file()
    quantization = metadata["quantization"]
    assert quantization["method"] == "int8"
    assert quantization["gate"]["clips"] >= 1  # the float and int8 models on held-out clips
    assert "top-1" in export and "agree" in export

    annotated = tmp_path / "annotated/clip05.mp4"
    video = cv2.VideoCapture(str(annotated))
    frames = int(video.get(cv2.CAP_PROP_FRAME_COUNT))
    video.release()
    assert frames >= 8, frames
    assert any(name in predict for name in CLASSES)
