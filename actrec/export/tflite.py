"""TFLite flatbuffers: converted from a function over Keras models, and run.

The model's layout (batch 1) is actrec.export.ready_clips'; the format's export is
actrec.export.formats.tflite.

Conversion goes through keras.export.ExportArchive and TFLiteConverter.from_saved_model, the
route Keras 3 documents (a tf.Module's SavedModel of a Keras 3 model converts without its
variables' values).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from actrec.errors import ConfigError

TFLITE_FILE = "model.tflite"
QUANTIZATIONS = ("none", "float16", "dynamic")
"""none: float32; float16: float16 weights (half the file); dynamic: int8 weights, float
activations (a quarter of the file)."""
FLOAT_TOLERANCE = 1e-4


def converted(function, input_signature: list, models: Sequence, quantize: str) -> bytes:
    """The TFLite flatbuffer of `function` (tensors by `input_signature` -> dict of
    tensors) over `models`' weights, quantised as asked."""
    import keras
    import tensorflow as tf

    with tempfile.TemporaryDirectory(prefix="actrec-tflite-") as folder:
        archive = keras.export.ExportArchive()
        for model in models:
            archive.track(model)
        archive.add_endpoint("serve", function, input_signature=input_signature)
        archive.write_out(folder, verbose=False)
        converter = tf.lite.TFLiteConverter.from_saved_model(folder)
        converter.experimental_enable_resource_variables = True
        if quantize != "none":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantize == "float16":
            converter.target_spec.supported_types = [tf.float16]
        return converter.convert()


INTERPRETERS = ("auto", "litert", "tensorflow")
"""Which interpreter runs a .tflite file: LiteRT (`ai-edge-litert`, the `actrec[litert]`
extra: what TensorFlow's deprecated tf.lite.Interpreter points to), TensorFlow's own, or
"auto": LiteRT where it is installed, else TensorFlow's."""


def interpreter_class(interpreter: str = "auto"):
    """(the Interpreter class, "litert" or "tensorflow") for `interpreter` (INTERPRETERS);
    ConfigError for LiteRT asked for but not installed, or an unknown name."""
    if interpreter not in INTERPRETERS:
        raise ConfigError(
            f"interpreter {interpreter!r} is not valid; choose one of: {', '.join(INTERPRETERS)}"
        )
    if interpreter != "tensorflow":
        try:
            from ai_edge_litert.interpreter import Interpreter
        except ImportError:
            if interpreter == "litert":
                raise ConfigError(
                    "LiteRT is not installed: pip install 'actrec[litert]' (ai-edge-litert), "
                    "or run the model with TensorFlow's interpreter"
                ) from None
        else:
            return Interpreter, "litert"
    import tensorflow as tf

    return tf.lite.Interpreter, "tensorflow"


class TfliteRunner:
    """A model.tflite (or its bytes), loaded: call it with its inputs by name (numpy arrays)
    for its outputs by name. num_threads: the interpreter's threads (None: its default);
    interpreter: one of INTERPRETERS (`self.interpreter` says which one runs it)."""

    def __init__(
        self,
        path: Path | str | None = None,
        content: bytes | None = None,
        num_threads: int | None = None,
        interpreter: str = "auto",
    ):
        import warnings

        Interpreter, self.interpreter = interpreter_class(interpreter)  # noqa: N806
        with warnings.catch_warnings():
            # TensorFlow's interpreter warns that it is deprecated in favour of LiteRT,
            # which "auto" prefers where it is installed.
            warnings.simplefilter("ignore")
            if content is not None:
                loaded = Interpreter(model_content=content, num_threads=num_threads)
            else:
                loaded = Interpreter(model_path=str(path), num_threads=num_threads)
        self._runner = loaded.get_signature_runner()

    def __call__(self, **inputs) -> dict:
        return self._runner(**{name: np.asarray(value) for name, value in inputs.items()})

    def run(self, inputs: dict) -> dict:
        """Outputs by name of inputs by name."""
        return self(**inputs)
