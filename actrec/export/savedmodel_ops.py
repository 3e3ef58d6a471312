"""A SavedModel is a program: what it runs is checked before it is loaded.

`tf.saved_model.load` already runs a SavedModel's initialisers and restore functions, and
its serving signature can call any TensorFlow op (WriteFile, PyFunc, a network read, ...).
PyTorch answers the same problem for checkpoints with `torch.load(weights_only=True)`; for a
SavedModel, `check_savedmodel_ops` reads `saved_model.pb` as data (a protocol buffer, no
graph is built) and allows:

- in the graph's own nodes and every function of its library that the saver does not
  reach: SIGNATURE_OPS, the ops actrec's own exports use there (every variant, every
  registered backbone: tests/export/derive_savedmodel_ops.py prints them,
  tests/export/test_savedmodel_ops.py fails when an export needs a new one);
- in the saver's own functions (those its save and restore nodes call, and nothing a
  signature reaches): those and SAVER_OPS, which read and write checkpoint files.

Anything else is refused by name (UntrustedModelError) unless the user trusts the model's
author (`--trust-model`). What is not checked: an op's inputs (a huge shape, a long loop:
resource exhaustion), and what LiteRT or ONNX Runtime do (their checks are their own).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from actrec.errors import UntrustedModelError

SAVED_MODEL_FILE = "saved_model.pb"
TRUST_FLAG = "--trust-model"

SIGNATURE_OPS = frozenset(
    {
        # printed by tests/export/derive_savedmodel_ops.py (every registered backbone, both
        # modalities, two streams fused, the online TSM's step), with the SavedModel's own
        # variable handles and function calls (PartitionedCall: a call of a function
        # without variables, as StatefulPartitionedCall is of one with)
        "AddV2", "All", "Assert", "AvgPool", "BiasAdd", "Cast", "ConcatV2", "Const", "Conv2D",
        "DepthwiseConv2dNative", "EnsureShape", "Equal", "Fill", "Floor", "FloorDiv",
        "GatherV2", "GreaterEqual", "Identity", "IdentityN", "Less", "LogicalAnd", "MatMul",
        "MaxPool", "Maximum", "Mean", "Minimum", "Mul", "NoOp", "Pack", "Pad",
        "PartitionedCall", "Placeholder", "Range", "Rank", "ReadVariableOp", "RealDiv", "Relu",
        "Relu6", "Reshape", "ResizeBilinear", "ReverseV2", "Round", "Rsqrt", "SelectV2",
        "Shape", "Sigmoid", "Softmax", "Sqrt", "Squeeze", "StatefulPartitionedCall",
        "StridedSlice", "Sub", "TopKV2", "Transpose", "VarHandleOp",
    }
)  # fmt: skip

SAVER_OPS = frozenset(
    {
        "AssignVariableOp", "DisableCopyOnRead", "MergeV2Checkpoints", "RestoreV2", "SaveV2",
        "Select", "ShardedFilename", "StaticRegexFullMatch", "StringJoin",
    }
)  # fmt: skip
"""The ops of TensorFlow's saver functions (tf.saved_model.save's _traced_save and
_traced_restore): allowed there only."""


def _called_functions(node) -> Iterable[str]:
    """The names of the functions a NodeDef calls through its attributes (f, then_branch,
    body, branches, ...)."""
    for value in node.attr.values():
        if value.HasField("func"):
            yield value.func.name
        yield from (function.name for function in value.list.func)


def graph_def_ops(graph_def) -> set[str]:
    """Every op type of a GraphDef: its nodes' and its function library's."""
    ops = {node.op for node in graph_def.node}
    for function in graph_def.library.function:
        ops |= {node.op for node in function.node_def}
    return ops


def _reachable(start: Iterable[str], functions: dict) -> set[str]:
    """The function names reachable from `start` through calls (the start included)."""
    seen, pending = set(), [name for name in start if name in functions]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        for node in functions[name].node_def:
            pending += [called for called in _called_functions(node) if called in functions]
    return seen


def _read_saved_model(model_dir: Path):
    from google.protobuf.message import DecodeError
    from tensorflow.core.protobuf import saved_model_pb2

    path = model_dir / SAVED_MODEL_FILE
    saved = saved_model_pb2.SavedModel()
    try:
        saved.ParseFromString(path.read_bytes())
    except FileNotFoundError:
        raise UntrustedModelError(
            f"{model_dir} has no {SAVED_MODEL_FILE}: it is not a SavedModel export; export "
            "the model again"
        ) from None
    except (OSError, DecodeError) as error:
        raise UntrustedModelError(
            f"{path} cannot be read as a SavedModel ({type(error).__name__}); export the model "
            "again"
        ) from None
    if len(saved.meta_graphs) != 1:
        raise UntrustedModelError(
            f"{path} holds {len(saved.meta_graphs)} graphs where an actrec export has one; "
            "export the model again"
        )
    return saved.meta_graphs[0]


def disallowed_ops(model_dir: Path) -> list[tuple[str, str]]:
    """(op, where) of every op of the SavedModel in `model_dir` that an actrec export never
    runs there (see the module), in a stable order; [] for an actrec export."""
    meta_graph = _read_saved_model(Path(model_dir))
    graph = meta_graph.graph_def
    functions = {function.signature.name: function for function in graph.library.function}
    nodes = {node.name: node for node in graph.node}
    saver = meta_graph.saver_def
    saver_nodes = {
        name.split(":")[0] for name in (saver.save_tensor_name, saver.restore_op_name) if name
    }
    saver_calls = [
        called for name in saver_nodes if name in nodes for called in _called_functions(nodes[name])
    ]
    other_calls = [
        called
        for node in graph.node
        if node.name not in saver_nodes
        for called in _called_functions(node)
    ]
    signature_reach = _reachable(other_calls, functions)
    saver_only = _reachable(saver_calls, functions) - signature_reach
    found = []
    for node in graph.node:
        if node.op not in SIGNATURE_OPS and node.op not in functions:
            found.append((node.op, f"graph node {node.name!r}"))
    for name, function in sorted(functions.items()):
        allowed = SIGNATURE_OPS | SAVER_OPS if name in saver_only else SIGNATURE_OPS
        for node in function.node_def:
            if node.op not in allowed and node.op not in functions:
                found.append((node.op, f"function {name!r}"))
    return sorted(set(found))


def check_savedmodel_ops(model_dir: Path | str) -> None:
    """UntrustedModelError naming the first op an actrec export never runs, before anything
    of the SavedModel is loaded or run."""
    found = disallowed_ops(Path(model_dir))
    if found:
        ops = sorted({op for op, _ in found})
        op, where = found[0]
        raise UntrustedModelError(
            f"{model_dir}: the model runs {', '.join(ops)} ({op} in its {where}), which an "
            "actrec export never does: it may act on your files or this machine. It was not "
            f"loaded; if you trust its author, pass {TRUST_FLAG}"
        )
