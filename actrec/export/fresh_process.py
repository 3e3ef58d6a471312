"""Run a model card's code in a new Python process, as a user who reads the card would.

A check in the process that wrote a model passes on what that process happened to import
(a Keras class registered by a module imported for training, say); a new interpreter has
imported nothing. `outputs_in_fresh_process` runs the card's Python block there, with the
inputs the card names defined as numpy arrays and its text variables (a path) as strings,
and returns what the block leaves in its variable `outputs`. The texts reach the process as
an argument (JSON), never pasted into the code: a path with a quote in it stays a path.
The process declines the optional packages TensorFlow and Keras import at start-up, as the
`actrec` command does (actrec.cluster.optional_imports: none of them can change what the
card's code computes; 2 s less CPU a check). That imports actrec's package and that one
module, which register nothing with Keras; the code's own imports are untouched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from actrec.errors import ActrecError

TIMEOUT_SECONDS = 600.0
OUTPUTS_VARIABLE = "outputs"

_RUNNER = """
import sys
from actrec.cluster.optional_imports import decline_optional_imports
decline_optional_imports()
import numpy as np
import json
code_path, inputs_path, outputs_path, texts = sys.argv[1:]
namespace = {**dict(np.load(inputs_path)), **json.loads(texts)}
exec(compile(open(code_path, encoding="utf-8").read(), "MODEL_CARD.md", "exec"), namespace)
outputs = namespace["outputs"]
if not isinstance(outputs, dict):
    outputs = {"outputs": outputs}
arrays = {name: np.asarray(value) for name, value in outputs.items()}
np.savez(outputs_path, **{n: a.astype("S") if a.dtype == object else a for n, a in arrays.items()})
"""


def outputs_in_fresh_process(
    code: str, inputs: dict[str, np.ndarray], texts: dict[str, str] | None = None
) -> dict[str, np.ndarray]:
    """{name: array} of the `outputs` variable (a dict, or one array as "outputs") that `code`
    leaves when run in a new interpreter (this one's executable and environment), the
    `inputs` and `texts` defined as variables of their names. ActrecError with the last line
    the process printed when it fails."""
    with tempfile.TemporaryDirectory(prefix="actrec-fresh-") as folder:
        folder = Path(folder)
        (folder / "card.py").write_text(code, encoding="utf-8")
        np.savez(folder / "inputs.npz", **inputs)
        environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
        try:
            finished = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    _RUNNER,
                    str(folder / "card.py"),
                    str(folder / "inputs.npz"),
                    str(folder / "outputs.npz"),
                    json.dumps(texts or {}),
                ],
                capture_output=True,
                text=True,
                timeout=TIMEOUT_SECONDS,
                env=environment,
                cwd=folder,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ActrecError(
                f"the model card's code did not finish in {TIMEOUT_SECONDS:.0f} s in a fresh "
                "Python process"
            ) from None
        if finished.returncode != 0:
            lines = [line for line in finished.stderr.splitlines() if line.strip()]
            raise ActrecError(
                "the model card's code fails in a fresh Python process: "
                + (lines[-1] if lines else f"exit code {finished.returncode}")
            )
        with np.load(folder / "outputs.npz") as saved:
            return {name: saved[name] for name in saved.files}
