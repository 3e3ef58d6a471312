"""docs/deploy.md's road, as written, in an empty folder, a fresh process a command
(tests/journey_harness.py): a published Kinetics TSM (a reference checkpoint written here in
its published layout, with random weights, stands for the download) converted, fine-tuned
online on a folder of tiny videos, evaluated, exported as a streaming int8 TFLite, and
streamed through `predict --stream --annotate`. The test appends only the `--set` options
that make the training tiny."""

from __future__ import annotations

import json
import shutil
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
@pytest.mark.recipe_scale
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


MOVINET_TINY_TRAINING = settings(
    "data.num_segments=4",
    "data.frame_interval=2",
    "data.crop_size=32",
    "data.scale_size=32",
    "train.batch_size=2",
    "train.epochs=2",  # the recipe warms up for 1
    "runtime.steps_per_epoch=1",
)


@pytest.mark.slow
@pytest.mark.recipe_scale
def test_the_movinet_road_runs_as_written(tmp_path):
    """The page's second road: the Model Garden's A0 stream (its checkpoint as
    tf-models-official wrote it, every weight from a seed: tests/movinet_reference.py) in the
    published tarball's layout converts, fine-tunes by movinet-a0-stream-folder onto other
    classes (its backbone carried over, a new classifier), exports as an int8 streaming
    TFLite within its gate and streams a video through `predict --stream --annotate`; the
    weights' license, Apache-2.0, reaches the fine-tuned export's card."""
    from movinet_reference import reference_file, written_references

    commands = documented_commands("deploy.md", block=1)
    assert [words[:2] for words in commands] == [
        ["actrec", "pretrained"],
        ["actrec", "prepare"],
        ["actrec", "train"],
        ["actrec", "export"],
        ["actrec", "predict"],
    ]
    folder, cases = written_references(tmp_path / "model-garden", names=("a0_stream",))
    written = reference_file(folder, cases["a0_stream"], "model")
    published = tmp_path / Path(commands[0][3]).parent  # movinet_a0_stream/
    published.mkdir()
    for path in written.parent.glob(f"{written.name}.*"):
        shutil.copy(path, published / path.name)
    assert (tmp_path / commands[0][3]).is_file()
    (tmp_path / "classes.txt").write_text("".join(f"class_{i}\n" for i in range(7)))
    for label, name in enumerate(CLASSES):
        for index in range(1, 11):
            path = tmp_path / "datasets/raw/my-videos" / name / f"clip{index:02d}.mp4"
            write_tiny_video(path, num_frames=16, seed=100 * label + index)

    # the reference's classifier has 7 outputs (the published file's 600 are Kinetics-600's)
    appended = {"pretrained": ["--classes", "classes.txt"], "train": MOVINET_TINY_TRAINING}
    steps = run_journey(commands, tmp_path, appended)
    convert, _, train, export, predict = (" ".join(step.said.split()) for step in steps)

    assert "Apache-2.0" in convert
    assert "classifier new (other classes)" in train
    assert "the published weights it starts from are licensed Apache-2.0" in train
    start = json.loads((tmp_path / "runs/my-videos-movinet/run.json").read_text())
    assert start["initialised_from"]["backbone"] == "movinet_a0_stream"
    phone = tmp_path / "models/my-videos-movinet-phone"
    metadata = json.loads((phone / "actrec.json").read_text())
    assert metadata["quantization"]["method"] == "int8"
    assert metadata["quantization"]["gate"]["verdict"] in ("passed", "undecided")
    assert metadata["streams"][0]["weights_license"] == "Apache-2.0"
    assert "top-1" in export and "agree" in export
    card = (phone / "MODEL_CARD.md").read_text(encoding="utf-8")
    assert "- Weights' license: Apache-2.0" in card and "initialised from)" in card
    video = cv2.VideoCapture(str(tmp_path / "annotated/movinet-clip05.mp4"))
    frames = int(video.get(cv2.CAP_PROP_FRAME_COUNT))
    video.release()
    assert frames >= 8, frames
    assert any(name in predict for name in CLASSES)
