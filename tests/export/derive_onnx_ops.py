"""Prints the ONNX operators (domain, op type) of every model actrec exports with
--format onnx, for every registered backbone: `python tests/export/derive_onnx_ops.py
[BACKBONE ...] [--opsets 13,18]` (minutes). Its output is
actrec.export.trust.onnx_checks.ONNX_OPS; tests/export/test_onnx_checks.py checks that the suite's
ONNX exports need no operator outside it.

Each variant is converted as `actrec export --format onnx` converts it
(actrec.export.formats.onnx.converted: one stream of each modality, two streams fused, the
online TSM's step), with random weights at a small input size, at every opset asked for;
the int8 export's QDQ quantisation adds QuantizeLinear and DequantizeLinear (domain "").
"""

from __future__ import annotations

import sys

import onnx
from derive_savedmodel_ops import _recipe_like, streaming_clip_networks

from actrec.backbones.registry import BACKBONES, SHIFT_BLOCKS, backbone_spec
from actrec.config.recipe import DataConfig, ModelConfig
from actrec.data.input.clip_spec import clip_spec
from actrec.export.formats.onnx import OPSETS, _with_next_state_names, converted
from actrec.export.ready_clips import clip_function, streaming_function
from actrec.export.streams import ExportedStream
from actrec.models.factory import build_model
from actrec.models.streaming import streaming_state_shapes

QUANTIZATION_OPS = {("", "QuantizeLinear"), ("", "DequantizeLinear")}


def model_ops(model: bytes) -> set[tuple[str, str]]:
    """(domain, op type) of every node of an ONNX model, its subgraphs' and its functions'."""
    proto = onnx.load_from_string(model)

    def graph_ops(graph):
        found = set()
        for node in graph.node:
            found.add((node.domain, node.op_type))
            for attribute in node.attribute:
                for subgraph in [attribute.g, *attribute.graphs]:
                    found |= graph_ops(subgraph)
        return found

    ops = graph_ops(proto.graph)
    for function in proto.functions:
        ops |= {(node.domain, node.op_type) for node in function.node}
    return ops


def variant_ops(backbone: str, crop: int, opsets) -> set[tuple[str, str]]:
    ops: set[tuple[str, str]] = set()
    architectures = ["tsn"]
    if backbone_spec(backbone).shift_family in SHIFT_BLOCKS:
        architectures.append("tsm")
    for architecture in architectures:
        streams = []
        for modality, new_length in (("rgb", 1), ("flow", 2)):
            data = DataConfig(
                modality=modality, num_segments=2, new_length=new_length, crop_size=crop,
                scale_size=crop + 8,
            )  # fmt: skip
            model = ModelConfig(architecture=architecture, backbone=backbone, weights="none")
            network = build_model(model, data, 5)
            stream = ExportedStream(clip_spec(_recipe_like(model, data), False), network)
            streams.append(stream)
            for opset in opsets:
                ops |= model_ops(converted(*clip_function([stream], None, "logits", None), opset))
        for opset in opsets:
            fused = clip_function(streams, (1.0, 1.5), "logits", None)
            ops |= model_ops(converted(*fused, opset))
        if architecture == "tsm":
            model = ModelConfig(
                architecture="tsm", backbone=backbone, weights="none", shift_direction="online"
            )
            data = DataConfig(num_segments=2, crop_size=crop, scale_size=crop + 8)
            network = build_model(model, data, 5)
            stream = ExportedStream(clip_spec(_recipe_like(model, data), False), network)
            state_shapes = streaming_state_shapes(network)
            function, signature = streaming_function(stream, state_shapes, None)
            states = {"streaming": {"states": [{"input": s.name} for s in signature[1:]]}}
            renamed = _with_next_state_names(function, {**states, "outputs": {}})
            for opset in opsets:
                ops |= model_ops(converted(renamed, signature, opset))
    return ops


def stream_network_ops(architecture: str, backbone: str, opsets, crop: int = 32):
    """(domain, op type) of a causal clip network's streaming step (a MoViNet `_stream`
    size) converted at `opsets`."""
    model = ModelConfig(architecture=architecture, backbone=backbone, weights="none")
    data = DataConfig(
        num_segments=2, crop_size=crop, scale_size=crop + 8, sampling="dense", frame_interval=2
    )
    network = build_model(model, data, 5)
    stream = ExportedStream(clip_spec(_recipe_like(model, data), False), network)
    function, signature = streaming_function(stream, streaming_state_shapes(network), None)
    states = {"streaming": {"states": [{"input": s.name} for s in signature[1:]]}}
    renamed = _with_next_state_names(function, {**states, "outputs": {}})
    return set().union(*(model_ops(converted(renamed, signature, opset)) for opset in opsets))


if __name__ == "__main__":
    arguments = sys.argv[1:]
    opsets = list(OPSETS)
    if "--opsets" in arguments:
        index = arguments.index("--opsets")
        opsets = [int(value) for value in arguments[index + 1].split(",")]
        del arguments[index : index + 2]
    every = set(QUANTIZATION_OPS)
    if not arguments:
        for architecture, backbone in streaming_clip_networks():
            every |= stream_network_ops(architecture, backbone, opsets)
            print(backbone, len(every), sorted(every), file=sys.stderr, flush=True)
    for name in arguments or list(BACKBONES):
        crop = 96 if name == "inception_v3" else 64
        ops = variant_ops(name, crop, opsets)
        print(name, len(ops), sorted(ops - every), file=sys.stderr, flush=True)
        every |= ops
    print(sorted(every))
