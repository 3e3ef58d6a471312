"""An ONNX model quantised to int8 by ONNX Runtime's static quantisation: QDQ format
(QuantizeLinear / DequantizeLinear pairs around each quantised op, which ONNX Runtime's CPU
provider fuses into integer kernels and TensorRT / OpenVINO read as they are), per-channel
int8 weights, int8 activations whose ranges are calibrated (MinMax) on clips of the run's
own training data (actrec.export.calibration). Input and output stay float32, and so do the
matrix products (the classifier's, a per-channel frame normalisation's), as in the int8
TFLite (actrec.export.tflite.FLOAT_OPS_OF_INT8: int8 logits flip near-even top classes)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from actrec.export.calibration import ClipSet


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


def quantized_int8(model: bytes, clips: ClipSet) -> bytes:
    """The int8 QDQ model of the float32 ONNX `model` (its bytes), calibrated on `clips`."""
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    reader_class = type("ClipReader", (_ClipReader, CalibrationDataReader), {})
    graph = onnx.load_from_string(model).graph
    names = [item.name for item in graph.input]
    products = [node for node in graph.node if node.op_type in FLOAT_OP_TYPES]
    product_outputs = {output for node in products for output in node.output}
    biases = [
        node for node in graph.node if node.op_type == "Add" and product_outputs & {*node.input}
    ]
    float_nodes = [node.name for node in products + biases]  # a product and its bias
    with tempfile.TemporaryDirectory(prefix="actrec-int8-") as folder:
        source, target = Path(folder) / "float.onnx", Path(folder) / "int8.onnx"
        source.write_bytes(model)
        quantize_static(
            str(source),
            str(target),
            reader_class(clips, names),
            quant_format=QuantFormat.QDQ,
            per_channel=True,
            activation_type=QuantType.QInt8,
            weight_type=QuantType.QInt8,
            nodes_to_exclude=float_nodes,
        )
        return target.read_bytes()
