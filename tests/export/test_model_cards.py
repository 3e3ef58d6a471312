"""Every export's MODEL_CARD.md code, taken from the written card, runs in a fresh Python
process and gives the exporting run's outputs (tests/card_harness.py): SavedModel, Keras,
TFLite and ONNX; one stream, two streams fused, the online TSM's streaming step. (Converted
and fine-tuned runs: tests/published/test_published_convert.py; distilled ones:
tests/train/test_distillation.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from card_harness import assert_cards_give_the_runs_outputs

from actrec.export.writer import export_runs


@pytest.fixture(scope="module")
def card_exports(tiny_runs, tiny_exports, tiny_online, tmp_path_factory) -> list[Path]:
    """One export of each format and variant: the SavedModel, TFLite and ONNX ones first
    (their cards must not need actrec), the Keras ones last."""
    folder = tmp_path_factory.mktemp("card-exports")
    two_stream = [tiny_runs["rgb"], tiny_runs["flow"]]
    online = [tiny_online["run"]]
    exports = [tiny_exports["rgb"], tiny_exports["two-stream"], tiny_online["export"]]
    for name, runs, options in (
        ("tflite-two-stream", two_stream, {"model_format": "tflite"}),
        ("tflite-streaming", online, {"model_format": "tflite", "streaming": True}),
        ("onnx-two-stream", two_stream, {"model_format": "onnx"}),
        ("onnx-streaming", online, {"model_format": "onnx", "streaming": True}),
        ("keras-tsm", online, {"model_format": "keras"}),
        ("keras-two-stream", two_stream, {"model_format": "keras"}),
    ):
        summary = export_runs(runs, folder / name, **options)
        # The Keras export checks itself with its card's code in a fresh process.
        assert summary.reloaded_in_fresh_process == (options["model_format"] == "keras")
        exports.append(folder / name)
    return exports


def test_every_model_cards_code_runs_in_a_fresh_process_and_gives_the_runs_outputs(
    card_exports, tmp_path
):
    compared = assert_cards_give_the_runs_outputs(card_exports, tmp_path)
    assert compared == {
        ("savedmodel", 1, False),
        ("savedmodel", 2, False),
        ("savedmodel", 1, True),
        ("tflite", 2, False),
        ("tflite", 1, True),
        ("onnx", 2, False),
        ("onnx", 1, True),
        ("keras", 1, False),
        ("keras", 2, False),
    }
