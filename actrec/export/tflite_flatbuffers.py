"""TFLite flatbuffers: converted from a function over Keras models, and run.

The model's layout (batch 1) is actrec.export.ready_clips'; the format's export is
actrec.export.formats.tflite.

Conversion traces the function once and hands it to TFLiteConverter.from_concrete_functions,
which freezes the models' variables into constants. The route Keras 3 documents
(keras.export.ExportArchive, a SavedModel written, then TFLiteConverter.from_saved_model)
converts the same flatbuffer (the same size, outputs within 3e-7 of each other) but traced
the models again for the archive and wrote and read back the SavedModel: the two-stream
export of the quickstart's models took 1.8x as long.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from actrec.backbones.keras_hard_swish import int8_hard_swish
from actrec.backbones.tflite_forms import traced_for_tflite
from actrec.errors import ActrecError, ConfigError

TFLITE_FILE = "model.tflite"
QUANTIZATIONS = ("none", "float16", "dynamic", "int8")
"""none: float32; float16: float16 weights (half the file); dynamic: int8 weights, float
activations (a quarter of the file); int8: int8 weights and activations, calibrated on a
representative dataset, float input and output and float matrix products (FLOAT_OPS_OF_INT8)
unless integer_io (every op int8)."""
FLOAT_TOLERANCE = 1e-4
FLOAT_OPS_OF_INT8 = ("FULLY_CONNECTED",)
"""The ops an int8 model with float input and output keeps in float32: the classifier's
product (and a per-channel frame normalisation's). int8 logits (256 levels over their
range) flipped the top class of near-even frames: a camera-motion run's streaming step
agreed with its float model on 91.0 % of frames, 97.7 % with float logits
(docs/benchmarks.md), for a few thousand float multiply-adds a frame. --integer-io keeps
every op int8 (what an NPU runs)."""


def converted(
    function,
    input_signature: list,
    models: Sequence,
    quantize: str,
    representative=None,
    integer_io: bool = False,
    integer_input: str = "uint8",
) -> bytes:
    """The TFLite flatbuffer of `function` (tensors by `input_signature` -> dict of
    tensors) over `models`' weights (frozen into it), quantised as asked.

    int8: `representative` (a callable yielding lists of inputs in signature order, batch
    1: actrec.export.quantization.calibration) calibrates the activations' ranges; float32 in
    and out (quantised inside), every op int8 but FLOAT_OPS_OF_INT8; integer_io: inputs of type
    `integer_input` (uint8: the 0-255 pixels as they are; int8: what a streaming step's
    states must be, to be fed back as they came out), int8 outputs and every op an int8
    builtin (a conversion error otherwise)."""
    import tensorflow as tf

    # The traced function holds its variables weakly: `holder` keeps them alive while the
    # converter reads their values (from_concrete_functions' trackable_obj).
    holder = tf.Module()
    holder.model_variables = [variable.value for model in models for variable in model.variables]
    # ops in the forms LiteRT's CPU delegate runs (actrec.backbones.tflite_forms; Keras's
    # own hard swish layers: actrec.backbones.keras_hard_swish)
    int8 = quantize == "int8"
    with traced_for_tflite(int8), int8_hard_swish(models if int8 else ()):
        traced = tf.function(function, input_signature=input_signature).get_concrete_function()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([traced], holder)
    if quantize != "none":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if quantize == "float16":
        converter.target_spec.supported_types = [tf.float16]
    if quantize == "int8":
        converter.representative_dataset = representative
        if integer_io:
            converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
            converter.inference_input_type = {"uint8": tf.uint8, "int8": tf.int8}[integer_input]
            converter.inference_output_type = tf.int8
    try:
        if quantize == "int8" and not integer_io:
            return _int8_with_float_ops(converter, FLOAT_OPS_OF_INT8)
        return converter.convert()
    except Exception as error:  # the converter's ConverterError is not in TensorFlow's API
        if type(error).__name__ != "ConverterError":
            raise
        raise ActrecError(_conversion_failure(str(error))) from None


def _conversion_failure(message: str) -> str:
    """One line for a TFLite ConverterError: the TensorFlow ops TFLite has no builtin kernel
    for (the "TF Select ops:" line the converter prints), else its first error line."""
    unsupported = re.search(r"TF Select ops: ([^\n]+)", message)
    if unsupported:
        ops = unsupported.group(1).strip()
        hint = " (a grouped 3D convolution: Keras's Conv3D with groups > 1)" * ("Conv3D" in ops)
        return (
            f"the model does not convert to TFLite: TFLite has no builtin kernel for the "
            f"TensorFlow ops {ops}{hint}; export --format savedmodel"
        )
    errors = [line.strip() for line in message.splitlines() if "error:" in line]
    detail = errors[0] if errors else (message.splitlines() or ["no detail"])[0]
    return f"the model does not convert to TFLite: {detail[:300]}; export --format savedmodel"


def _int8_with_float_ops(converter, float_ops: Sequence[str]) -> bytes:
    """The int8 flatbuffer of a calibrating `converter` (optimizations and representative
    dataset set) with `float_ops` left in float32, through TFLite's selective quantisation
    (its QuantizationDebugger: the converter's own API for it)."""
    import warnings

    import tensorflow as tf

    options = tf.lite.experimental.QuantizationDebugOptions(denylisted_ops=list(float_ops))
    with warnings.catch_warnings():
        # It loads the calibrated model in TensorFlow's deprecated tf.lite.Interpreter.
        warnings.simplefilter("ignore")
        debugger = tf.lite.experimental.QuantizationDebugger(
            converter=converter, debug_options=options
        )
        return debugger.get_nondebug_quantized_model()


def states_changing_scale(runner: TfliteRunner, names: Sequence[str]) -> list[str]:
    """The states of an integer-I/O streaming step (`names`: each the name of its input and
    of its output) whose output is not of its input's type, scale and zero point: fed back
    as they came out, they would be read wrong. TFLite gives a state's slice and the
    concatenation that reads it one scale, so this is empty for actrec's steps."""
    inputs, outputs = runner.input_details, runner.output_details
    return [
        name
        for name in names
        if (inputs[name]["dtype"], inputs[name]["quantization"])
        != (outputs[name]["dtype"], outputs[name]["quantization"])
    ]


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
            try:
                if content is not None:
                    loaded = Interpreter(model_content=content, num_threads=num_threads)
                else:
                    loaded = Interpreter(model_path=str(path), num_threads=num_threads)
                self._runner = loaded.get_signature_runner()
            except (ValueError, RuntimeError) as error:
                where = "the converted model" if content is not None else str(path)
                raise ConfigError(
                    f"{self.interpreter} cannot load {where} ({str(error).splitlines()[0]}); "
                    "export the model again"
                ) from None

        self._inputs = self._runner.get_input_details()
        self._outputs = self._runner.get_output_details()

    @property
    def input_details(self) -> dict:
        """LiteRT's details (dtype, quantization, ...) of each input, by name."""
        return self._inputs

    @property
    def output_details(self) -> dict:
        """LiteRT's details of each output, by name."""
        return self._outputs

    def __call__(self, **inputs) -> dict:
        """Outputs by name (float32) of inputs by name (float32; quantised here for a model
        with integer inputs, and its integer outputs dequantised)."""
        fed = {
            name: _quantized(np.asarray(value), self._inputs.get(name))
            for name, value in inputs.items()
        }
        outputs = self._runner(**fed)
        return {
            name: _dequantized(value, self._outputs.get(name)) for name, value in outputs.items()
        }

    def run(self, inputs: dict) -> dict:
        """Outputs by name of inputs by name."""
        return self(**inputs)


def _quantized(value: np.ndarray, details: dict | None) -> np.ndarray:
    """`value` as an integer input takes it (round(x / scale) + zero point, clipped)."""
    if details is None or not np.issubdtype(details["dtype"], np.integer):
        return value
    scale, zero_point = details["quantization"]
    limits = np.iinfo(details["dtype"])
    quantized = np.round(value.astype(np.float32) / scale) + zero_point
    return np.clip(quantized, limits.min, limits.max).astype(details["dtype"])


def _dequantized(value: np.ndarray, details: dict | None) -> np.ndarray:
    """An integer output as float32 ((q - zero point) * scale); others as they are."""
    if details is None or not np.issubdtype(np.asarray(value).dtype, np.integer):
        return value
    scale, zero_point = details["quantization"]
    return ((value.astype(np.float32) - zero_point) * scale).astype(np.float32)
