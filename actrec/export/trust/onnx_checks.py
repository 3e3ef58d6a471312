"""What an ONNX file handed to `actrec predict` may hold, read as data by actrec before ONNX
Runtime loads anything (actrec's word does not rest on ONNX Runtime's own checks).

- Every tensor stored outside the file ("external data"), wherever the file holds a tensor:
  the graph's initializers and sparse initializers, every node attribute's tensor, tensors
  and sparse tensors (a Constant's `value` and `sparse_value` among them), the nodes of
  every subgraph (If, Loop, Scan bodies) and of every model-local function, names a file
  inside the export folder: not absolute, no `..` out, no link that leads out. An ONNX file
  can otherwise name any path of the machine for ONNX Runtime to read. actrec's exports
  store every tensor inside the file.
- Every operator (domain, op type), in the graph, its subgraphs and its local functions, is
  one of ONNX_OPS, those actrec's own ONNX exports use (every variant, opset and
  registered backbone: tests/export/derive_onnx_ops.py prints them,
  tests/export/test_onnx_checks.py fails when an export needs a new one). A custom domain's
  operator runs code the file does not hold (a library ONNX Runtime was given), and a call
  of a local function is refused as its name is not an ONNX operator.

A file that cannot be parsed is refused by name as damaged.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from actrec.errors import UntrustedModelError
from actrec.export.trust.savedmodel_ops import TRUST_FLAG

ONNX_DOMAIN = ""
"""The default operator set's domain (also spelt "ai.onnx")."""

ONNX_OPS = frozenset(
    {
        # tests/export/derive_onnx_ops.py printed, for test_mobilenet_v2 at opsets 13 and
        # 18 (every variant) with the int8 QDQ pair: Add Cast Clip Concat Conv
        # DequantizeLinear Div Gather GlobalAveragePool Less MatMul Mul Not Pad
        # QuantizeLinear Range ReduceMean Reshape Shape Slice Softmax Squeeze Sub Transpose
        # Unsqueeze; at opset 17 for MobileNetV3-Small, EfficientNet-B0, EfficientNetV2-B0,
        # DenseNet-121, InceptionV3, ResNet-50 (torchvision layout) and TSM's MobileNetV2
        # (2026-12-01) it added AveragePool, GlobalAveragePool, MaxPool, Relu, Sigmoid and
        # nothing else; at opsets 13, 15 and 18 for ResNet-50 (Keras and torchvision
        # layouts), MobileNetV3-Small and EfficientNet-B0 (2026-12-02) nothing new (28 ops
        # in all, the QDQ pair included). ONNX Runtime's pre-processing of an int8 export
        # fuses MatMul + Add into Gemm (the suite's streaming int8 ONNX). The rest are
        # default-domain ops those layers may convert to at other opsets or sizes
        # (BatchNormalization, hard sigmoid and swish, ...), not yet seen; no default-domain
        # operator reads or writes a file. A VideoMAE clip network (test_videomae at opset
        # 17, 2026-12-02) added Reciprocal and ReduceProd; MoViNet's streaming step
        # (test_movinet_stream, its cumulative pooling, 2026-12-06) added CumSum.
        "Abs", "Add", "AveragePool", "BatchNormalization", "Cast", "Clip", "Concat",
        "Constant", "ConstantOfShape", "Conv", "CumSum", "DequantizeLinear", "Div", "Equal",
        "Erf", "Exp", "Expand", "Flatten", "Floor", "Gather", "Gemm", "GlobalAveragePool",
        "Greater", "HardSigmoid", "HardSwish", "Identity", "Less", "MatMul", "Max", "MaxPool",
        "Min", "Mul", "Neg", "Not", "Pad", "Pow", "QuantizeLinear", "Range", "Reciprocal",
        "ReduceMax", "ReduceMean", "ReduceProd", "ReduceSum", "Relu", "Reshape", "Resize",
        "Round", "Shape", "Sigmoid", "Slice", "Softmax", "Split", "Sqrt", "Squeeze", "Sub",
        "Tanh", "Tile", "Transpose", "Unsqueeze", "Where",
    }
)  # fmt: skip
"""The op types of the default domain ("") actrec's ONNX exports use; no other domain."""


def _damaged(path: Path) -> UntrustedModelError:
    return UntrustedModelError(
        f"{path} is not a readable ONNX model (damaged or cut short); export the model again"
    )


def _attribute_tensors(attribute) -> Iterator:
    """The TensorProtos of a node attribute: t, tensors, sparse_tensor, sparse_tensors."""
    if attribute.HasField("t"):
        yield attribute.t
    yield from attribute.tensors
    sparse = [attribute.sparse_tensor] if attribute.HasField("sparse_tensor") else []
    for tensor in [*sparse, *attribute.sparse_tensors]:
        yield tensor.values
        yield tensor.indices


def _nodes(nodes) -> Iterator:
    """Every node of `nodes` and of their attributes' subgraphs, depth first."""
    for node in nodes:
        yield node
        for attribute in node.attribute:
            subgraphs = [attribute.g] if attribute.HasField("g") else []
            for graph in [*subgraphs, *attribute.graphs]:
                yield from _graph_nodes(graph)


def _graph_nodes(graph) -> Iterator:
    yield from _nodes(graph.node)


def _graph_tensors(graph) -> Iterator:
    """Every TensorProto of a graph: its initializers, its subgraphs' (see _tensors)."""
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield sparse.values
        yield sparse.indices
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("g"):
                yield from _graph_tensors(attribute.g)
            for subgraph in attribute.graphs:
                yield from _graph_tensors(subgraph)


def _tensors(model) -> Iterator:
    """Every TensorProto of a model: the graph's and its subgraphs' initializers, and the
    attributes of every node of the graph, its subgraphs and its local functions (with
    the functions' attribute defaults)."""
    yield from _graph_tensors(model.graph)
    functions = list(model.functions)
    for node in [*_graph_nodes(model.graph), *(n for f in functions for n in _nodes(f.node))]:
        for attribute in node.attribute:
            yield from _attribute_tensors(attribute)
    for function in functions:
        for attribute in function.attribute_proto:
            yield from _attribute_tensors(attribute)


def read_onnx_model(path: Path):
    """The ModelProto of `path`, its external data not read; UntrustedModelError when it is
    not an ONNX file (or the onnx package is missing)."""
    from google.protobuf.message import DecodeError

    try:
        import onnx
    except ImportError:
        raise UntrustedModelError(
            f"checking {path} before ONNX Runtime loads it needs the onnx package: pip "
            "install 'actrec[onnx]'"
        ) from None
    try:
        return onnx.load(str(path), load_external_data=False)
    except (DecodeError, OSError, ValueError, RuntimeError):
        raise _damaged(path) from None


def onnx_external_locations(model) -> list[str]:
    """The `location` of every tensor the ModelProto stores outside its file, wherever it
    is (see the module); "" for one that names none."""
    import onnx

    locations = []
    for tensor in _tensors(model):
        if tensor.data_location == onnx.TensorProto.EXTERNAL or len(tensor.external_data):
            entries = {entry.key: entry.value for entry in tensor.external_data}
            locations.append(entries.get("location", ""))
    return locations


def onnx_operators(model) -> set[tuple[str, str]]:
    """(domain, op type) of every node of a ModelProto's graph, its subgraphs and its local
    functions ("ai.onnx" written as "")."""
    nodes = [*_graph_nodes(model.graph), *(n for f in model.functions for n in _nodes(f.node))]
    return {
        (ONNX_DOMAIN if node.domain == "ai.onnx" else node.domain, node.op_type) for node in nodes
    }


def check_onnx_file(path: Path) -> None:
    """UntrustedModelError for a damaged file, external data outside the export folder or
    an operator actrec's exports never use (see the module), before ONNX Runtime loads it."""
    path = Path(path)
    if not path.is_file():
        raise UntrustedModelError(f"{path} does not exist; export the model again")
    folder = path.parent.resolve()
    model = read_onnx_model(path)
    for location in onnx_external_locations(model):
        target = (folder / location).resolve()
        if not location or Path(location).is_absolute() or folder not in target.parents:
            raise UntrustedModelError(
                f"{path} reads tensor data from {location!r}, outside its folder, which an "
                "actrec export never does: it may read any file of this machine. It was not "
                f"loaded; if you trust its author, pass {TRUST_FLAG}"
            )
    foreign = sorted(
        op for op in onnx_operators(model) if op[0] != ONNX_DOMAIN or op[1] not in ONNX_OPS
    )
    if foreign:
        names = ", ".join(f"{domain or 'ai.onnx'}:{op}" for domain, op in foreign)
        raise UntrustedModelError(
            f"{path} runs the operators {names}, which an actrec export never does: a custom "
            "operator or function runs code the file does not hold. It was not loaded; if "
            f"you trust its author, pass {TRUST_FLAG}"
        )
