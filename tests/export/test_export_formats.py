"""The export-format registry (actrec.export.formats): one module per format that the CLI,
`predict`, the model card and `--init-from` read; each format's MODEL_CARD.md; LiteRT and
TensorFlow's interpreter for TFLite files."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from actrec.errors import ConfigError
from actrec.export.formats.registry import export_format, format_names
from actrec.export.writer import export_runs
from actrec.runs.record import RunRecord

REPOSITORY = Path(__file__).resolve().parents[2]
FORMAT_NAME_COMPARISONS = re.compile(
    r"model_format\s*[!=]=|\[\"model_format\"\]\s*[!=]=|\.get\(\"model_format\"\)"
)


def test_every_format_is_one_registered_module_and_the_cli_offers_exactly_those():
    from actrec_cli.export import export

    assert format_names()[0] == "savedmodel"
    assert set(format_names()) == {"savedmodel", "keras", "tflite", "onnx"}
    for name in format_names():
        module = export_format(name)
        assert module.name == name and module.title and module.summary
    choices = next(p for p in export.params if p.name == "model_format").type.choices
    assert tuple(choices) == format_names()
    with pytest.raises(ConfigError, match="export format 'mp4' is not valid; choose one of"):
        export_format("mp4")


def test_no_code_outside_the_registry_compares_a_format_name():
    """Adding a format is one module of actrec/export/formats: nothing else branches on a
    format's name."""
    offenders = []
    for folder in ("actrec", "cli"):
        for path in (REPOSITORY / folder).rglob("*.py"):
            if "formats" in path.parts:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if FORMAT_NAME_COMPARISONS.search(line):
                    offenders.append(f"{path.relative_to(REPOSITORY)}:{number}: {line.strip()}")
    assert offenders == []


@pytest.fixture(scope="module")
def tiny_tflite(tiny_runs, tmp_path_factory) -> Path:
    """A float32 TFLite export of the tiny RGB run."""
    out = tmp_path_factory.mktemp("tiny-tflite") / "lite"
    export_runs([tiny_runs["rgb"]], out, model_format="tflite")
    return out


def _copy_run(run_dir: Path, destination: Path) -> Path:
    shutil.copytree(
        run_dir, destination, ignore=shutil.ignore_patterns("checkpoints", "tensorboard")
    )
    return destination


def _evaluated_runs(tiny_runs, folder: Path) -> tuple[Path, Path]:
    """Copies of the tiny runs with their own centre evaluations and their fusion (RGB 1 :
    flow 1.5), which `actrec eval` writes into the RGB run's eval folder."""
    from actrec.evaluation.evaluate import evaluate_run, fuse_evaluations
    from actrec.evaluation.protocols import resolve_protocol

    rgb = _copy_run(tiny_runs["rgb"], folder / "rgb-run")
    flow = _copy_run(tiny_runs["flow"], folder / "flow-run")
    evaluations = [evaluate_run(run, resolve_protocol("centre")) for run in (rgb, flow)]
    fused = fuse_evaluations(evaluations, (1.0, 1.5))
    assert fused.out_dir.parent == rgb / "eval"
    return rgb, flow


def test_model_cards_name_the_format_its_usage_and_what_each_evaluation_evaluated(
    tiny_runs, tiny_exports, tmp_path
):
    """The TFLite and ONNX cards call their model by its format and show its own runtime;
    a fused evaluation is listed once, as the fusion of both runs, never as the RGB row."""
    pytest.importorskip("tf2onnx")
    rgb, flow = _evaluated_runs(tiny_runs, tmp_path)
    export_runs([rgb], tmp_path / "lite", model_format="tflite", quantize="float16")
    export_runs([rgb, flow], tmp_path / "onnx", model_format="onnx")
    cards = {name: (tmp_path / name / "MODEL_CARD.md").read_text() for name in ("lite", "onnx")}
    saved = (tiny_exports["rgb"] / "MODEL_CARD.md").read_text()

    assert "as a TFLite model (float16 quantisation)" in cards["lite"]
    assert "from ai_edge_litert.interpreter import Interpreter" in cards["lite"]
    assert "as an ONNX model" in cards["onnx"]
    assert "onnxruntime.InferenceSession" in cards["onnx"]
    assert "as a TensorFlow SavedModel" in saved and "tf.saved_model.load" in saved
    for card in cards.values():
        assert "Keras model" not in card and "tf.saved_model.load" not in card

    own = json.loads((rgb / "eval" / "test-centre" / "results.json").read_text())
    fused = json.loads(next((rgb / "eval").glob("fused-*/results.json")).read_text())
    fusion = (
        f"| fusion of rgb `rgb-run` x 1 + flow `flow-run` x 1.5 | centre | test | 8 | "
        f"{100 * fused['top1']:.1f} % | {100 * fused['top5']:.1f} % | "
        f"{100 * fused['mean_class_accuracy']:.1f} % |"
    )
    for card, streams in ((cards["onnx"], ["| rgb", "| flow"]), (cards["lite"], ["| rgb"])):
        rows = [line for line in card.splitlines() if line.startswith("| ")][1:]
        assert [row for row in rows if row.startswith("| fusion")] == [fusion]  # listed once
        assert [row.split(" | ")[0] for row in rows if row != fusion] == streams
        assert f"| rgb | centre | test | 8 | {100 * own['top1']:.1f} % |" in card


def test_a_run_starts_from_the_formats_that_keep_weights_and_is_refused_by_the_others(
    tiny_runs, tiny_tflite
):
    from actrec.config.files import load_recipe
    from actrec.config.overrides import apply_overrides
    from actrec.runs.trained import load_trained_run
    from actrec.train.start.starting_point import starting_point

    classes = load_trained_run(tiny_runs["rgb"]).classes
    recipe = apply_overrides(load_recipe("synthetic-rgb"), [f"model.weights=run:{tiny_tflite}"])
    with pytest.raises(ConfigError) as refused:
        starting_point(recipe, classes, RunRecord())
    assert "a TFLite model export (--format tflite) holds weights converted for inference" in (
        str(refused.value)
    )
    assert str(tiny_runs["rgb"].resolve()) in str(refused.value)
    assert export_format("savedmodel").starts_runs and export_format("keras").starts_runs
    assert not export_format("onnx").starts_runs


@pytest.mark.parametrize("interpreter", ["litert", "tensorflow"])
def test_tflite_files_run_in_litert_and_in_tensorflows_interpreter(
    interpreter, tiny_runs, tiny_exports, tiny_tflite
):
    """Both interpreters give the SavedModel's probabilities; "auto" prefers LiteRT."""
    if interpreter == "litert":
        pytest.importorskip("ai_edge_litert", reason="the litert extra")
    from actrec.export.tflite_flatbuffers import TfliteRunner
    from actrec.predict.video_files import ExportedModel

    out = tiny_tflite
    assert TfliteRunner(out / "model.tflite", interpreter=interpreter).interpreter == interpreter
    lite = ExportedModel(out, interpreter=interpreter)
    saved = ExportedModel(tiny_exports["rgb"])
    video = sorted((tiny_runs["raw"] / "MoveLeft").glob("*.avi"))[0]
    inputs = saved.video_inputs(video)
    np.testing.assert_allclose(
        lite.probabilities(inputs), saved.probabilities(inputs), atol=1e-4, rtol=0
    )
    if interpreter == "litert":
        assert TfliteRunner(out / "model.tflite").interpreter == "litert"
