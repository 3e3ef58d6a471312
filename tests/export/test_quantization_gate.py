"""The accuracy gate of every quantised export and the data a quantised export needs:
refused beyond --max-drop with both figures and nothing written; int8 without data refused
naming --calibration-data before any work; --calibration-data for a run without data; the
figures in actrec.json, checked by its schema."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from actrec.data.format.manifest import read_manifest
from actrec.errors import ConfigError
from actrec.export.accuracy_gate import measured_gate
from actrec.export.calibration import ClipSet
from actrec.export.metadata import read_export_metadata


def test_the_gate_refuses_a_drop_beyond_max_drop(tiny_runs, tmp_path, cli_runner):
    """A negative --max-drop is below any measured drop: refused, exit 1, both top-1s and
    the agreement printed, nothing written (dynamic quantisation is gated as int8 is)."""
    out = tmp_path / "refused"
    result = cli_runner(
        "export", tiny_runs["rgb"], "--out", out, "--format", "tflite",
        "--quantize", "dynamic", "--max-drop", "-1", "--gate-clips", "4",
    )  # fmt: skip
    assert result.exit_code != 0
    text = " ".join(result.output.split())
    assert "loses too much accuracy" in text and "--max-drop -1" in text
    assert "top-1 float32" in text and ", dynamic " in text and "agreement" in text
    assert "4 test clips" in text and "nothing was written" in text
    assert not out.exists() and not list(tmp_path.glob(".refused*"))


def _run_without_data(run, prepared, folder):
    """A copy of `run` whose prepared data is gone, its preparation settings recorded in
    run.json (as a converted published model's are)."""
    copy = shutil.copytree(run, folder)
    record = json.loads((copy / "run.json").read_text())
    record["data"] = str(folder.parent / "gone")
    record["prepare_settings"] = read_manifest(prepared)["settings"]
    (copy / "run.json").write_text(json.dumps(record))
    return copy


def test_int8_needs_data_and_takes_calibration_data(tiny_runs, tmp_path, cli_runner):
    """Without the run's data, int8 is refused naming --calibration-data (before the model
    is built); with it, the export calibrates and gates on that folder, and actrec.json's
    figures pass its schema (a changed one does not)."""
    prepared = tiny_runs["prepared"]
    run = _run_without_data(tiny_runs["rgb"], prepared, tmp_path / "run")
    out = tmp_path / "int8"
    result = cli_runner("export", run, "--out", out, "--format", "onnx", "--quantize", "int8")
    assert result.exit_code == 1 and "--calibration-data PREPARED" in result.output
    assert not out.exists()
    result = cli_runner(
        "export", run, "--out", out, "--format", "onnx", "--quantize", "int8",
        "--calibration-data", prepared, "--calibration-clips", "4", "--gate-clips", "4",
        "--max-drop", "100",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    entry = read_export_metadata(out)["quantization"]
    assert entry["calibration"] == {"clips": 4, "split": "train", "data": str(prepared)}
    assert entry["gate"]["split"] == "test" and entry["gate"]["clips"] == 4
    assert f"agreement {entry['gate']['agreement']:.1%} on 4 test clips" in result.output

    metadata = json.loads((out / "actrec.json").read_text())
    metadata["quantization"]["gate"]["agreement"] = 1.5
    (out / "actrec.json").write_text(json.dumps(metadata))
    with pytest.raises(ConfigError, match=r"quantization\.gate\.agreement"):
        read_export_metadata(out)


def test_integer_io_needs_int8_tflite(tiny_runs, tmp_path, cli_runner):
    for arguments in (["--format", "onnx", "--quantize", "int8"], ["--format", "tflite"]):
        result = cli_runner(
            "export", tiny_runs["rgb"], "--out", tmp_path / "x", "--integer-io", *arguments
        )
        assert result.exit_code == 1 and "--integer-io" in result.output
        assert "--quantize int8 and --format tflite" in result.output


def test_clips_without_labels_give_the_agreement_only(tmp_path):
    """No labels of the model's classes: no top-1, the agreement alone, never refused."""
    clips = ClipSet({"frames": np.arange(4, dtype=np.float32).reshape(4, 1)}, np.full(4, -1),
                    tmp_path, "test", False)  # fmt: skip

    def float_run(inputs):
        return {"logits": np.array([[0.0, 1.0]])}

    def quantized_run(inputs):
        value = inputs["frames"][0, 0]
        return {"logits": np.array([[1.0, 0.0]] if value == 3 else [[0.0, 1.0]])}

    result = measured_gate(float_run, quantized_run, clips, max_drop=-5)
    assert result.float_top1 is None and result.agreement == 0.75 and result.passed
    assert "no labels" in result.summary("int8") and "75.0%" in result.summary("int8")
