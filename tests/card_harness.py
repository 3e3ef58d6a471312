"""Runs what a written MODEL_CARD.md tells a user to run, in a fresh Python process.

The code is taken from the card itself: its "## Use" section's Python block, THIS_FOLDER
replaced by the export folder, and the inputs the card lists ("- `name`: dtype [shape]: ...")
defined as random arrays of that dtype and shape (symbolic sizes given by SIZES). So the
card and the test cannot drift: a card whose code does not run, or names an input it does
not list, fails here.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SIZES = {"N": 2, "F": 10, "F-1": 9, "H": 60, "W": 80}
"""Values of the symbolic sizes the cards use (80x60 frames: the training frames were 64x48)."""

_INPUT_LINE = re.compile(r"^- `(\w+)`: (\w+) (\[.*?\]): ")

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
print("ACTREC_MODULES", json.dumps(report))
"""


def card_code(card: str) -> str:
    """The Python block of the card's "## Use" section."""
    use = card[card.index("## Use") :]
    return use[use.index("```python\n") + len("```python\n") :].split("```", 1)[0]


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


def run_cards(folders: list[Path], work: Path, seed: int = 0) -> list[CardRun]:
    """Each export folder's card code, run in order in one fresh Python process on random
    inputs of the shapes the card lists. The actrec modules imported after each card are
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
                "code": card_code(card).replace("THIS_FOLDER", folder.as_posix()),
                "inputs": str(work / f"card-{index}-in.npz"),
                "outputs": str(work / f"card-{index}-out.npz"),
            }
        )
    finished = subprocess.run(
        [sys.executable, "-c", _RUNNER, json.dumps(jobs)],
        capture_output=True,
        text=True,
        cwd=work,
    )
    assert finished.returncode == 0, finished.stderr[-4000:]
    line = next(line for line in finished.stdout.splitlines() if line.startswith("ACTREC_MODULES"))
    modules = json.loads(line.split(" ", 1)[1])
    runs = []
    for index, folder in enumerate(folders):
        with np.load(work / f"card-{index}-out.npz") as saved:
            outputs = {name: saved[name] for name in saved.files}
        runs.append(CardRun(folder, inputs[index], outputs, modules[index]))
    return runs
