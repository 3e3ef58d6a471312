"""Every export's MODEL_CARD.md code, taken from the written card, runs in a fresh Python
process and gives the exporting run's outputs (tests/card_harness.py): SavedModel, Keras,
TFLite and ONNX; one stream, two streams fused, the online TSM's streaming step. (Converted
and fine-tuned runs: tests/published/test_published_convert.py; distilled ones:
tests/train/test_distillation.py.) A folder named like code is a path in the card's code
and in the export's own fresh-process check. The Keras cards' code runs under Keras's JAX
and PyTorch backends too."""

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


def test_a_keras_export_into_a_folder_named_like_code_runs_none_of_it(
    tiny_runs, tmp_path, cli_runner, monkeypatch
):
    """--out with a `"`, a `'` and a call of os.system in its name: pasted into the card's
    code (as it was), the export's fresh-process check would run the call, which touches
    the marker file."""
    marker = tmp_path / "injected"
    monkeypatch.setenv("ACTREC_TEST_MARKER", str(marker))  # the fresh processes inherit it
    call = 'str(__import__("os").system("touch $ACTREC_TEST_MARKER"))'
    out = tmp_path / f'it\'s a card" + {call} + "'
    result = cli_runner("export", tiny_runs["rgb"], "--format", "keras", "--out", out)
    assert result.exit_code == 0, result.output
    assert "fresh Python process" in result.output
    assert not marker.exists()
    card = (out / "MODEL_CARD.md").read_text()
    assert "model_path = 'THIS_FOLDER/model.keras'" in card
    assert assert_cards_give_the_runs_outputs([out], tmp_path) == {("keras", 1, False)}
    assert not marker.exists()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_the_keras_cards_code_gives_the_runs_outputs_under_jax_and_torch(
    card_exports, tmp_path, backend
):
    """A trained TSM's and a two-stream model's `.keras` exports, loaded by their cards' code
    in a fresh process under KERAS_BACKEND=jax and torch, give TensorFlow's outputs."""
    keras_exports = [folder for folder in card_exports if folder.name.startswith("keras-")]
    compared = assert_cards_give_the_runs_outputs(keras_exports, tmp_path, backend=backend)
    assert compared == {("keras", 1, False), ("keras", 2, False)}
