"""An ONNX model quantised to int8 by ONNX Runtime's static quantisation: QDQ format
(QuantizeLinear / DequantizeLinear pairs around each quantised op, which ONNX Runtime's CPU
provider fuses into integer kernels), per-channel int8 weights, uint8 activations whose
ranges are calibrated (MinMax) on clips of the run's own training data
(actrec.export.quantization.calibration). Input and output stay float32, and so do the
matrix products (the classifier's, a per-channel frame normalisation's), as in the int8
TFLite (actrec.export.tflite_flatbuffers.FLOAT_OPS_OF_INT8: int8 logits flip near-even top
classes)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from actrec.export.quantization.calibration import ClipSet


class _ClipReader:
    """onnxruntime.quantization's CalibrationDataReader over a ClipSet: one clip (batch 1)
    by input name at a time, None at the end."""

    def __init__(self, clips: ClipSet, names):
        self._clips = clips
        self._names = list(names)
        self._index = 0

    def get_next(self):
        if self._index >= self._clips.count:
            return None
        clip = self._clips.clip(self._index)
        self._index += 1
        return {name: clip[name] for name in self._names}

    def rewind(self):
        self._index = 0


FLOAT_OP_TYPES = ("MatMul", "Gemm")
"""ONNX op types an int8 model keeps in float32 (see the module)."""


def _float_nodes(graph) -> list[str]:
    """The names of `graph`'s matrix products (FLOAT_OP_TYPES) and of the Add of each one's
    bias."""
    products = [node for node in graph.node if node.op_type in FLOAT_OP_TYPES]
    outputs = {output for node in products for output in node.output}
    biases = [node for node in graph.node if node.op_type == "Add" and outputs & {*node.input}]
    return [node.name for node in products + biases]


def quantized_int8(model: bytes, clips: ClipSet) -> bytes:
    """The int8 QDQ model of the float32 ONNX `model` (its bytes), calibrated on `clips`.

    ONNX Runtime's pre-processing (its graph optimisation: BatchNorm and activations folded
    into the convolutions) runs first, and activations are uint8 (weights int8, "U8S8"):
    on the 224-px MobileNetV2 TSM step, one AVX-512 core, the int8 model ran in 20.7 ms
    without either (slower than float32's 10.4 ms), 9.3 ms pre-processed, 6.4 ms
    pre-processed with uint8 activations (ONNX Runtime's x86 integer kernels take unsigned
    activations)."""
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    reader_class = type("ClipReader", (_ClipReader, CalibrationDataReader), {})
    with tempfile.TemporaryDirectory(prefix="actrec-int8-") as folder:
        source, optimised = Path(folder) / "float.onnx", Path(folder) / "optimised.onnx"
        target = Path(folder) / "int8.onnx"
        source.write_bytes(model)
        # The shapes are static (batch 1): ONNX's own shape inference suffices.
        quant_pre_process(str(source), str(optimised), skip_symbolic_shape=True)
        graph = onnx.load(str(optimised)).graph
        quantize_static(
            str(optimised),
            str(target),
            reader_class(clips, [item.name for item in graph.input]),
            quant_format=QuantFormat.QDQ,
            per_channel=True,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            nodes_to_exclude=_float_nodes(graph),
        )
        return target.read_bytes()
