"""The console script declines the optional packages TensorFlow and Keras import at start-up
(actrec.cluster.optional_imports), and only those imports: TensorFlow, Keras and the packages
themselves still work in its process."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from actrec_cli.main import run

from actrec.cluster.optional_imports import OptionalImportsDeclined

_PROCESS = """
import json, sys, time
from actrec.cluster.optional_imports import decline_optional_imports

decline_optional_imports()
started = time.process_time()
import tensorflow as tf
import keras
seconds = time.process_time() - started
optional = ("matplotlib", "sklearn", "IPython", "jax")
absent = [name for name in optional if name not in sys.modules]
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
output = keras.ops.convert_to_numpy(model(tf.ones((1, 3)))).shape
from sklearn.metrics import confusion_matrix  # actrec's metrics, after TensorFlow
import matplotlib
matplotlib.use("Agg")
from matplotlib import pyplot  # actrec's confusion-matrix plot
imported = [name for name in optional[:2] if name in sys.modules]
print(json.dumps({"absent": absent, "output": list(output), "later": imported,
                  "confusion": confusion_matrix([0, 1], [1, 1]).tolist(), "seconds": seconds}))
"""


def test_the_console_script_puts_the_finder_first(monkeypatch):
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path])
    monkeypatch.setattr(sys, "argv", ["actrec", "--version"])
    with pytest.raises(SystemExit) as finished:
        run()
    assert finished.value.code == 0
    assert isinstance(sys.meta_path[0], OptionalImportsDeclined)
    assert sum(isinstance(finder, OptionalImportsDeclined) for finder in sys.meta_path) == 1


@pytest.mark.slow
def test_tensorflow_starts_without_them_and_they_import_afterwards(tmp_path):
    finished = subprocess.run(
        [sys.executable, "-c", _PROCESS], capture_output=True, text=True, cwd=tmp_path
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    report = json.loads(finished.stdout.strip().splitlines()[-1])
    print(f"import tensorflow, keras: {report['seconds']:.2f} s CPU")
    assert report["absent"] == ["matplotlib", "sklearn", "IPython", "jax"]
    assert report["output"] == [1, 2]  # Keras runs a model
    assert report["later"] == ["matplotlib", "sklearn"]
    assert report["confusion"] == [[0, 1], [0, 1]]
