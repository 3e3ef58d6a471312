"""An int8 streaming step's states read and written as int8 where they can be fed back so.

An int8 TFLite step with float32 inputs and outputs quantizes each float32 state on the way
in (QUANTIZE) and dequantizes it on the way out (DEQUANTIZE), every frame: in a MoViNet-A0
stream, states of 711 thousand numbers against a frame's 89 thousand. A state whose int8
input and output have the same scale and zero point (a causal convolution's frame buffer:
the frames it keeps come out as they went in) can skip both: the app feeds back the int8
tensor the step gave. `with_int8_states` rewrites the flatbuffer so (the QUANTIZE and
DEQUANTIZE ops of those states removed, the step's signature reading and writing their int8
tensors); the others (cumulative pools, whose sums grow and come out at another scale) stay
float32. TFLite's converter sets the types of all inputs and outputs or none
(`inference_input_type`), so this edits its flatbuffer with TensorFlow's own
flatbuffer_utils.
"""

from __future__ import annotations

from collections.abc import Sequence


def _key(name) -> str:
    return name.decode() if isinstance(name, bytes) else str(name)


def _same_quantization(first, second) -> bool:
    """Whether two tensors (flatbuffer objects) hold int8 values of one scale and zero
    point, and one shape."""
    if first.quantization is None or second.quantization is None:
        return False
    return (
        first.type == second.type
        and list(first.shape) == list(second.shape)
        and list(first.quantization.scale) == list(second.quantization.scale)
        and list(first.quantization.zeroPoint) == list(second.quantization.zeroPoint)
    )


def with_int8_states(flatbuffer: bytes, names: Sequence[str]) -> tuple[bytes, list[str]]:
    """(the flatbuffer with each state of `names` whose int8 input and output share scale
    and zero point read and written as int8, those states' names); a model with other
    signatures or subgraphs than one comes back unchanged."""
    from tensorflow.lite.tools import flatbuffer_utils

    model = flatbuffer_utils.convert_bytearray_to_object(bytearray(flatbuffer))
    if len(model.subgraphs) != 1 or len(model.signatureDefs) != 1:
        return flatbuffer, []
    graph, signature = model.subgraphs[0], model.signatureDefs[0]
    inputs = {_key(item.name): item for item in signature.inputs}
    outputs = {_key(item.name): item for item in signature.outputs}
    consumers: dict[int, list[int]] = {}
    producer: dict[int, int] = {}
    for index, op in enumerate(graph.operators):
        for tensor in op.inputs:
            consumers.setdefault(int(tensor), []).append(index)
        for tensor in op.outputs:
            producer[int(tensor)] = index

    def op_name(index: int) -> str:
        return flatbuffer_utils.opcode_to_name(model, graph.operators[index].opcodeIndex)

    removed, made = set(), []
    for name in names:
        if name not in inputs or name not in outputs:
            continue
        read, written = int(inputs[name].tensorIndex), int(outputs[name].tensorIndex)
        readers, writer = consumers.get(read, []), producer.get(written)
        if len(readers) != 1 or op_name(readers[0]) != "QUANTIZE" or writer is None:
            continue
        if op_name(writer) != "DEQUANTIZE":
            continue
        quantized_in = int(graph.operators[readers[0]].outputs[0])
        quantized_out = int(graph.operators[writer].inputs[0])
        if not _same_quantization(graph.tensors[quantized_in], graph.tensors[quantized_out]):
            continue
        graph.inputs = [quantized_in if int(t) == read else t for t in graph.inputs]
        graph.outputs = [quantized_out if int(t) == written else t for t in graph.outputs]
        inputs[name].tensorIndex, outputs[name].tensorIndex = quantized_in, quantized_out
        removed.update((readers[0], writer))
        made.append(name)
    if not made:
        return flatbuffer, []
    graph.operators = [op for index, op in enumerate(graph.operators) if index not in removed]
    return bytes(flatbuffer_utils.convert_object_to_bytearray(model)), made
