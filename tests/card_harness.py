"""Runs what a written MODEL_CARD.md tells a user to run, in a fresh Python process.

The code is taken from the card itself: its "## Use" section's Python block, each string
literal naming THIS_FOLDER replaced by a literal (repr) of the export folder's path, and the
inputs the card lists ("- `name`: dtype [shape]: ...") defined as random arrays of that
dtype and shape (symbolic sizes given by SIZES). So the card and the test cannot drift: a
card whose code does not run, or names an input it does not list, fails here.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from actrec.data.input.clip_spec import clip_spec
from actrec.export.formats.registry import ExportRequest
from actrec.export.metadata import read_export_metadata
from actrec.export.streams import ExportedStream
from actrec.runs.trained import build_trained_model, load_trained_run

SIZES = {"N": 2, "F": 10, "F-1": 9, "H": 60, "W": 80}
"""Values of the symbolic sizes the cards use (80x60 frames: the training frames were 64x48)."""

_INPUT_LINE = re.compile(r"^- `(\w+)`: (\w+) (\[.*?\]): ")
_FOLDER_LITERAL = re.compile(r"(['\"])THIS_FOLDER([^'\"]*)\1")

_RUNNER = """
import json, sys
import numpy as np

report = []
for job in json.loads(sys.argv[1]):
    namespace = dict(np.load(job["inputs"]))
    exec(compile(job["code"], job["card"], "exec"), namespace)
    outputs = namespace["outputs"]
    if not isinstance(outputs, dict):
        outputs = {"outputs": outputs}
    arrays = {name: np.asarray(value) for name, value in outputs.items()}
    arrays = {n: a.astype("S") if a.dtype == object else a for n, a in arrays.items()}
    np.savez(job["outputs"], **arrays)
    report.append(sorted(name for name in sys.modules if name.split(".")[0] == "actrec"))
backend = sys.modules["keras"].backend.backend() if "keras" in sys.modules else None
print("ACTREC_MODULES", json.dumps(report))
print("KERAS_BACKEND", json.dumps(backend))
"""


def card_code(card: str) -> str:
    """The Python block of the card's "## Use" section."""
    use = card[card.index("## Use") :]
    return use[use.index("```python\n") + len("```python\n") :].split("```", 1)[0]


def with_folder(code: str, folder: Path) -> str:
    """`code` with each string literal "THIS_FOLDER..." (either quote) replaced by a literal
    of the path in `folder`: a folder named with a quote stays a path."""
    return _FOLDER_LITERAL.sub(lambda match: repr(folder.as_posix() + match[2]), code)


def card_inputs(card: str) -> dict[str, tuple[str, list]]:
    """{name: (dtype, shape)} of the inputs the card's "## Use" section lists."""
    use = card[card.index("## Use") :].split("## Limitations", 1)[0]
    inputs = {}
    for line in use.splitlines():
        match = _INPUT_LINE.match(line)
        if match:
            inputs[match[1]] = (match[2], ast.literal_eval(match[3]))
    return inputs


def random_inputs(card: str, seed: int) -> dict[str, np.ndarray]:
    """Arrays of the card's inputs: uint8 over 0-255, float32 over 0-255 (what the cards
    take: pixels and quantised flow) or zeros for the streaming states."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for name, (dtype, shape) in card_inputs(card).items():
        shape = [SIZES[size] if isinstance(size, str) else size for size in shape]
        if name.startswith("state_"):
            arrays[name] = np.zeros(shape, dtype)
        else:
            arrays[name] = rng.integers(0, 256, shape).astype(dtype)
    return arrays


@dataclass(frozen=True)
class CardRun:
    """One export's card run: its folder, the inputs given and the outputs its code left."""

    folder: Path
    inputs: dict
    outputs: dict
    actrec_modules: list


def run_cards(
    folders: list[Path], work: Path, seed: int = 0, backend: str | None = None
) -> list[CardRun]:
    """Each export folder's card code, run in order in one fresh Python process on random
    inputs of the shapes the card lists (under KERAS_BACKEND=`backend` where given, which
    the process is checked to have used). The actrec modules imported after each card are
    reported (a SavedModel, TFLite or ONNX card needs none)."""
    jobs, inputs = [], []
    for index, folder in enumerate(folders):
        card = (folder / "MODEL_CARD.md").read_text(encoding="utf-8")
        arrays = random_inputs(card, seed + index)
        np.savez(work / f"card-{index}-in.npz", **arrays)
        inputs.append(arrays)
        jobs.append(
            {
                "card": str(folder / "MODEL_CARD.md"),
                "code": with_folder(card_code(card), folder),
                "inputs": str(work / f"card-{index}-in.npz"),
                "outputs": str(work / f"card-{index}-out.npz"),
            }
        )
    environment = dict(os.environ)
    if backend is not None:
        environment.update(KERAS_BACKEND=backend, JAX_PLATFORMS="cpu")
    finished = subprocess.run(
        [sys.executable, "-c", _RUNNER, json.dumps(jobs)],
        capture_output=True,
        text=True,
        cwd=work,
        env=environment,
    )
    assert finished.returncode == 0, finished.stderr[-4000:]
    if backend is not None:
        line = next(line for line in finished.stdout.splitlines() if "KERAS_BACKEND" in line)
        assert json.loads(line.split(" ", 1)[1]) == backend, line
    line = next(line for line in finished.stdout.splitlines() if line.startswith("ACTREC_MODULES"))
    modules = json.loads(line.split(" ", 1)[1])
    runs = []
    for index, folder in enumerate(folders):
        with np.load(work / f"card-{index}-out.npz") as saved:
            outputs = {name: saved[name] for name in saved.files}
        runs.append(CardRun(folder, inputs[index], outputs, modules[index]))
    return runs


# --- what the exporting runs give: the reference the cards' outputs are compared with -----

TOLERANCE = {"savedmodel": 1e-5, "keras": 1e-5, "tflite": 1e-4, "onnx": 1e-4}
"""The formats' own tolerances against the exporting run (float32)."""
FUSION_WEIGHTS = (1.0, 1.5)  # export's default


def _streams(run_dirs: list[Path]) -> list[ExportedStream]:
    runs = sorted((load_trained_run(path) for path in run_dirs), key=lambda r: r.modality != "rgb")
    return [
        ExportedStream(clip_spec(run.recipe, False), build_trained_model(run), run) for run in runs
    ]


def _numpy(outputs) -> dict:
    if not isinstance(outputs, dict):
        outputs = {"outputs": outputs}
    return {name: np.asarray(value) for name, value in outputs.items()}


def reference_outputs(export: Path, inputs: dict) -> dict:
    """What the exporting runs' models, rebuilt in this process, give on the card's inputs:
    the export's own graph functions over them (no file written or read back)."""
    metadata = read_export_metadata(export)
    streams = _streams([Path(stream["run"]) for stream in metadata["streams"]])
    model_format, streaming = metadata["model_format"], bool(metadata.get("streaming"))
    if model_format == "savedmodel" and streaming:
        from actrec.export.streaming_export import build_streaming_serving
        from actrec.models.streaming import streaming_state_shapes

        shapes = streaming_state_shapes(streams[0].model)
        serve, signature = build_streaming_serving(streams[0].model, streams[0].spec, shapes)
        return _numpy(serve(*[inputs[spec.name] for spec in signature]))
    if model_format == "savedmodel":
        from actrec.export.serving import build_serving_function

        classes = metadata["classes"]
        serve = build_serving_function(streams, classes, metadata["top_k"], FUSION_WEIGHTS)
        return _numpy(serve(*[inputs[stream.input_name] for stream in streams]))
    if model_format == "keras":
        if len(streams) == 1:
            return _numpy(streams[0].model(inputs["frames"], training=False))
        from actrec.models.fusion import build_two_stream_model

        model = build_two_stream_model(streams[0].model, streams[1].model, FUSION_WEIGHTS)
        return _numpy(model({"rgb": inputs["rgb"], "flow": inputs["flow"]}, training=False))
    from actrec.export.ready_clips import model_function

    request = ExportRequest(streams, metadata["classes"], 5, FUSION_WEIGHTS, streaming=streaming)
    function, signature, _ = model_function(request, None)
    outputs = _numpy(function(*[inputs[spec.name] for spec in signature]))
    if model_format == "onnx":  # an ONNX output cannot share an input's name
        outputs = {f"next_{n}" if n.startswith("state_") else n: v for n, v in outputs.items()}
    return outputs


def assert_cards_give_the_runs_outputs(
    folders: list[Path], work: Path, backend: str | None = None
) -> set:
    """Runs the cards of `folders` (run_cards, under Keras's `backend` where given) and
    asserts each gives its exporting runs' outputs (TensorFlow's, in this process) within
    its format's tolerance, on inputs that give different scores; a SavedModel, TFLite or
    ONNX card imports no actrec. Returns the (format, streams, streaming) variants compared."""
    runs = run_cards(folders, work, backend=backend)
    compared = set()
    for run in runs:
        metadata = read_export_metadata(run.folder)
        model_format = metadata["model_format"]
        if model_format != "keras":  # TensorFlow, LiteRT or ONNX Runtime alone
            assert run.actrec_modules == [], run.folder.name
        expected = reference_outputs(run.folder, run.inputs)
        assert run.outputs and set(run.outputs) <= set(expected), (run.folder.name, run.outputs)
        for name, value in run.outputs.items():
            if value.dtype.kind == "S":  # the SavedModel's top-k class names
                assert (value == expected[name].astype("S")).all(), (run.folder.name, name)
                continue
            difference = np.abs(value.astype(np.float64) - expected[name]).max()
            assert difference <= TOLERANCE[model_format], (run.folder.name, name, difference)
        scores = next(
            run.outputs[name]
            for name in ("probabilities", "logits", "outputs")
            if name in run.outputs
        )
        assert np.abs(scores[0] - scores[-1]).max() > 1e-4 or scores.shape[0] == 1
        compared.add((model_format, len(metadata["streams"]), bool(metadata.get("streaming"))))
    return compared
