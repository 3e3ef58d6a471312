"""The road from a published MoViNet to a phone, through the CLI as a user runs it: the Model
Garden's A0 stream (its checkpoint as tf-models-official wrote it, every weight from a seed:
tests/movinet_reference.py) converts, fine-tunes by `movinet-a0-stream-folder` onto a folder
of other classes (its backbone carried over, a new classifier), exports as an int8 streaming
TFLite within its accuracy gate, and `predict --stream --annotate` writes the annotated
video. On the tiny synthetic set and the recipe's test size (4 frames of 32 px, 4 steps)."""

from __future__ import annotations

import json

import cv2
import pytest
from movinet_reference import reference_file, written_references

from actrec.runs.trained import build_trained_model, load_trained_run

pytestmark = pytest.mark.slow

TEST_SIZE = (
    "data.num_segments=4",
    "data.frame_interval=2",
    "data.crop_size=32",
    "data.scale_size=32",
    "data.flip=false",  # the synthetic classes have directions: a mirror changes them
    "train.epochs=2",
    "train.warmup_epochs=1",
    "runtime.steps_per_epoch=2",
    "runtime.validate_every_epochs=0",
    "runtime.checkpoint_every_steps=0",
)


def test_a_converted_a0_stream_fine_tunes_exports_as_int8_and_streams_a_video(
    cli_runner, tiny_synthetic_prepared, tmp_path
):
    folder, cases = written_references(tmp_path / "model-garden", names=("a0_stream",))
    checkpoint = reference_file(folder, cases["a0_stream"], "model")
    classes = tmp_path / "classes.txt"  # the reference's classifier has 7 outputs
    classes.write_text("".join(f"class_{index}\n" for index in range(7)))
    source = tmp_path / "runs" / "movinet-a0-stream"
    converted = cli_runner(
        "pretrained", "convert", f"{checkpoint}.index", "--classes", classes, "--out", source
    )
    assert converted.exit_code == 0, converted.output
    assert "Apache-2.0" in converted.output

    settings = [word for setting in TEST_SIZE for word in ("--set", setting)]
    tuned = tmp_path / "runs" / "my-videos-movinet"
    trained = cli_runner(
        "train", "--recipe", "movinet-a0-stream-folder", "--init-from", source,
        "--data", tiny_synthetic_prepared, "--workdir", tuned, *settings,
    )  # fmt: skip
    assert trained.exit_code == 0, trained.output
    output = " ".join(trained.output.split())
    backbone = [
        weight
        for weight in build_trained_model(load_trained_run(source)).weights
        if weight.path.split("/")[0] != "classifier"
    ]
    assert f"loaded {len(backbone)} backbone weight tensors" in output
    assert "classifier new (other classes)" in output
    assert "the published weights it starts from are licensed Apache-2.0" in output
    start = json.loads((tuned / "run.json").read_text())["initialised_from"]
    assert (start["architecture"], start["backbone"]) == ("movinet", "movinet_a0_stream")

    phone = tmp_path / "models" / "my-videos-phone"
    exported = cli_runner(
        "export", tuned, "--out", phone, "--streaming", "--format", "tflite", "--quantize", "int8"
    )
    assert exported.exit_code == 0, exported.output
    gate = json.loads((phone / "actrec.json").read_text())["quantization"]["gate"]
    assert gate["verdict"] in ("passed", "undecided") and gate["clips"] == 8, gate
    # fine-tuned weights stay under the published weights' terms: the card says whose
    card = (phone / "MODEL_CARD.md").read_text(encoding="utf-8")
    assert "- Weights' license: Apache-2.0" in card and "initialised from)" in card

    video = next((tiny_synthetic_prepared.parent / "raw").rglob("*.avi"))
    annotated = tmp_path / "annotated.mp4"
    predicted = cli_runner("predict", video, "--model", phone, "--stream", "--annotate", annotated)
    assert predicted.exit_code == 0, predicted.output
    capture = cv2.VideoCapture(str(annotated))
    frames = int(capture.get(cv2.CAP_PROP_FRAME_COUNT))
    capture.release()
    source_frames = cv2.VideoCapture(str(video))
    assert frames == int(source_frames.get(cv2.CAP_PROP_FRAME_COUNT)) > 0
    source_frames.release()
