"""A SavedModel is a program: what TensorFlow's loader would run of it is checked as data.

`actrec predict` does not load an untrusted SavedModel with TensorFlow's loader: it rebuilds
the serving function with actrec's own code and reads the variables as data
(actrec.export.trust.savedmodel_rebuild). The model card tells users to load the folder with
`tf.saved_model.load`, which runs the file's functions, so `check_savedmodel_ops` still
refuses a `saved_model.pb` that would act if loaded. It reads the protocol buffer (no graph
is built) and decides what runs by what the TF2 loader calls, never by names or labels the
file gives itself:

- a SavedModel without a TF2 object graph is refused: TensorFlow loads it as TF1
  (`load_v1_in_v2`), which runs its saver's restore op, whatever that op calls;
- the loaded functions are every concrete function the object graph names (its
  `concrete_functions`, every function and bare concrete function object, the save and
  restore functions of its saveable objects; the signatures are among them), and every
  function they reach: through any function-valued attribute (f, body, cond, then_branch,
  branches, ...: `func` and `list(func)`), through a node whose op is a library function's
  name, and through a reached function's registered gradient;
- in those, only SIGNATURE_OPS, the ops actrec's own exports use there (every variant,
  every registered backbone: tests/export/derive_savedmodel_ops.py prints them); in the
  rest of the library (the saver's own functions, which only the TF1 loader runs, and it is
  refused) also SAVER_OPS; in the graph's own nodes (which the TF2 loader does not run)
  SIGNATURE_OPS and function calls;
- every object graph reference (a child, a capture, a saveable's function) names an object
  the graph has, and every function it names is in the library.

Anything else is refused by name (UntrustedModelError) unless the user trusts the model's
author (`--trust-model`). What is not checked: an op's inputs (a huge shape, a long loop:
resource exhaustion); TFLite and ONNX files are checked by actrec.export.trust.tflite_checks and
actrec.export.trust.onnx_checks.
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
        # without variables, as StatefulPartitionedCall is of one with); a VideoMAE clip
        # network's (test_videomae, 2026-12-02) added Conv3D (tubelets), Einsum (attention),
        # Erf (GELU), Neg, Prod, SquaredDifference and StopGradient (layer norm); dense
        # sampling (data.sampling=dense: TSM's and VideoMAE's clips) added FloorMod (a
        # short video's frame indices wrap around, actrec.data.input.sampling); the gradient
        # functions tf.saved_model.save stores for custom gradients (Keras's swish in
        # EfficientNet(V2), hard-swish in MoViNet) added Square, Sum and ZerosLike: those
        # exports were refused until then (tests/export/test_rebuilt_every_backbone.py,
        # ACTREC_EVERY_BACKBONE=families, 2026-12-02); MoViNet's streaming step (its
        # buffers, cumulative pooling and frame count: the script's streaming clip networks,
        # 2026-12-06) added BroadcastTo, Cumsum and ExpandDims
        "AddV2", "All", "Assert", "AvgPool", "BiasAdd", "BroadcastTo", "Cast", "ConcatV2",
        "Const", "Conv2D", "Conv3D", "Cumsum", "DepthwiseConv2dNative", "Einsum", "EnsureShape",
        "Equal", "Erf", "ExpandDims", "Fill", "Floor", "FloorDiv", "FloorMod", "GatherV2",
        "GreaterEqual", "Identity", "IdentityN",
        "Less", "LogicalAnd", "MatMul", "MaxPool", "Maximum", "Mean", "Minimum", "Mul", "Neg",
        "NoOp", "Pack", "Pad", "PartitionedCall", "Placeholder", "Prod", "Range", "Rank",
        "ReadVariableOp", "RealDiv", "Relu", "Relu6", "Reshape", "ResizeBilinear", "ReverseV2",
        "Round", "Rsqrt", "SelectV2", "Shape", "Sigmoid", "Softmax", "Sqrt", "SquaredDifference",
        "Square", "Squeeze", "StatefulPartitionedCall", "StopGradient", "StridedSlice", "Sub",
        "Sum", "TopKV2", "Transpose", "VarHandleOp", "ZerosLike",
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


def _called_functions(node, functions: dict) -> Iterable[str]:
    """The names of the library functions a NodeDef calls: through any function-valued
    attribute (f, then_branch, body, branches, ...) and by its op (a library function's
    name)."""
    if node.op in functions:
        yield node.op
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


def _reachable(start: Iterable[str], functions: dict, gradients: dict) -> set[str]:
    """The function names reachable from `start` through calls and registered gradients
    (the start included; names not in the library left out)."""
    seen, pending = set(), [name for name in start if name in functions]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        called = [
            *(c for node in functions[name].node_def for c in _called_functions(node, functions))
        ]
        if name in gradients:
            called.append(gradients[name])
        pending += [function for function in called if function in functions]
    return seen


def _object_graph_functions(model_dir: Path, meta_graph, functions: dict) -> set[str]:
    """The names of the functions TensorFlow's TF2 loader calls or may call: every concrete
    function the object graph names. UntrustedModelError for a SavedModel without an object
    graph (TF1), a reference to an object it does not have or a function not in the
    library."""
    path = model_dir / SAVED_MODEL_FILE
    graph = meta_graph.object_graph_def
    if not meta_graph.HasField("object_graph_def") or not graph.nodes:
        raise UntrustedModelError(
            f"{path} is a TF1-style SavedModel (no object graph), which an actrec export "
            "never is: TensorFlow would run its saver's restore op, which may act on your "
            f"files. It was not loaded; if you trust its author, pass {TRUST_FLAG}"
        )
    names = set(graph.concrete_functions)
    node_ids = []
    for node in graph.nodes:
        kind = node.WhichOneof("kind")
        if kind == "function":
            names |= set(node.function.concrete_functions)
        elif kind == "bare_concrete_function":
            names.add(node.bare_concrete_function.concrete_function_name)
        node_ids += [child.node_id for child in node.children]
        node_ids += [ref.node_id for ref in node.dependencies]
        for saveable in node.saveable_objects.values():
            node_ids += [saveable.save_function, saveable.restore_function]
    for concrete in graph.concrete_functions.values():
        node_ids += list(concrete.bound_inputs)
    outside = [node_id for node_id in node_ids if not 0 <= node_id < len(graph.nodes)]
    missing = sorted(name for name in names if name not in functions)
    if outside or missing:
        what = f"object {outside[0]}" if outside else f"function {missing[0]!r}"
        raise UntrustedModelError(
            f"{path} refers to {what}, which it does not hold (damaged or edited); export "
            "the model again"
        )
    return names


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
    runs there (see the module), in a stable order; [] for an actrec export.
    UntrustedModelError for a TF1-style SavedModel or a damaged object graph."""
    model_dir = Path(model_dir)
    meta_graph = _read_saved_model(model_dir)
    graph = meta_graph.graph_def
    functions = {function.signature.name: function for function in graph.library.function}
    gradients = {entry.function_name: entry.gradient_func for entry in graph.library.gradient}
    loaded = _reachable(
        _object_graph_functions(model_dir, meta_graph, functions), functions, gradients
    )
    found = []
    for node in graph.node:
        if node.op not in SIGNATURE_OPS and node.op not in functions:
            found.append((node.op, f"graph node {node.name!r}"))
    for name, function in sorted(functions.items()):
        allowed = SIGNATURE_OPS if name in loaded else SIGNATURE_OPS | SAVER_OPS
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
