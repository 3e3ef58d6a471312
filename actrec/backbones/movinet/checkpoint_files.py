"""MoViNet's published files read as data: a Model Garden checkpoint (`ckpt-1.index` /
`ckpt-1.data-*`, a folder holding one) or a TF Hub SavedModel (its `variables/` folder),
through `tf.train.load_checkpoint` and the checkpoint's object graph, a protocol buffer.
Nothing of the file is executed and the Model Garden is not imported.

Variables are named by their path from the classifier through the object graph,
"layer_with_weights-0/layer_with_weights-3/_feature/_conv/kernel": the shortest path
(on a tie, the first child in the object graph's order, as TensorFlow names them), so a
checkpoint written with `model=` and `backbone=`
(the Model Garden's checkpoint items; tools/convert_3d_2plus1d.py), one with `model=` only
and a SavedModel, whichever alias stored a variable, name it alike. A checkpoint of the
backbone alone (`backbone/...`) names it from the backbone, under "layer_with_weights-0/".
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from actrec.errors import WeightsError

BACKBONE = "layer_with_weights-0/"
_ALIASES = re.compile(
    r"^(layer-\d+|variables|trainable_variables|non_trainable_variables|keras_api|"
    r"_self_saveable_object_factories|signatures|save_counter|optimizer)$"
)
"""Object-graph children that repeat what the layer paths already reach."""


@dataclass(frozen=True)
class MovinetVariables:
    """A file's variables: path from the classifier -> float32 array; `kind` "checkpoint"
    or "savedmodel"; `prefix` the checkpoint prefix read; `has_classifier` False for a
    backbone-only checkpoint."""

    tensors: dict[str, np.ndarray]
    kind: str
    prefix: Path
    has_classifier: bool


def checkpoint_prefix(path: Path) -> tuple[Path, str]:
    """(the checkpoint prefix to read, "checkpoint" or "savedmodel") for a path the user
    gives: a SavedModel folder, its variables/ folder, a checkpoint folder (its `checkpoint`
    file, or its one *.index), a prefix, or a prefix's .index / .data file."""
    path = Path(path)
    if path.is_dir():
        if (path / "saved_model.pb").is_file():
            return path / "variables" / "variables", "savedmodel"
        if (path / "variables.index").is_file():
            return path / "variables", "savedmodel"
        indexes = sorted(path.glob("*.index"))
        named = _latest_in_checkpoint_file(path)
        if named is not None:
            return named, "checkpoint"
        if len(indexes) == 1:
            return indexes[0].with_suffix(""), "checkpoint"
        raise WeightsError(
            f"{path}: no MoViNet checkpoint here (no saved_model.pb, variables/, `checkpoint` "
            f"file or single *.index; found {len(indexes)} .index files); give the ckpt-N "
            "prefix or a TF Hub SavedModel folder"
        )
    name = path.name
    if ".data-" in name:
        path = path.with_name(name.split(".data-")[0])
    elif name.endswith(".index"):
        path = path.with_suffix("")
    if not Path(f"{path}.index").is_file():
        raise WeightsError(
            f"{path}: not a TensorFlow checkpoint ({path.name}.index is missing); give a Model "
            "Garden ckpt-N prefix, its .index file, or a TF Hub SavedModel folder"
        )
    kind = "savedmodel" if path.parent.name == "variables" else "checkpoint"
    return path, kind


def _latest_in_checkpoint_file(folder: Path) -> Path | None:
    state = folder / "checkpoint"
    if not state.is_file():
        return None
    match = re.search(r'^model_checkpoint_path:\s*"([^"]+)"', state.read_text(), re.MULTILINE)
    if not match:
        return None
    prefix = Path(match.group(1))
    return prefix if prefix.is_absolute() else folder / prefix


def read_movinet_variables(path: Path | str) -> MovinetVariables:
    """Every variable of the MoViNet classifier in the file at `path`, by its path from the
    classifier; WeightsError naming the file when it is no TensorFlow checkpoint or holds
    no Keras model's object graph."""
    import tensorflow as tf  # lazily: the CLI answers before TensorFlow
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    prefix, kind = checkpoint_prefix(Path(path))
    try:
        reader = tf.train.load_checkpoint(str(prefix))
        graph_bytes = reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH")
    except Exception as error:  # a damaged or foreign file: one line naming it
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise WeightsError(
            f"{prefix}: not a readable TensorFlow object-based checkpoint ({first[:200]})"
        ) from None
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(graph_bytes)
    root, has_classifier, start = _classifier_node(graph, prefix)
    tensors = {}
    for name, key in _variable_paths(graph, root).items():
        tensors[start + name] = np.asarray(reader.get_tensor(key))
    return MovinetVariables(tensors, kind, prefix, has_classifier)


def _children(node) -> dict[str, int]:
    return {child.local_name: child.node_id for child in node.children}


def _classifier_node(graph, prefix) -> tuple[int, bool, str]:
    """(the node paths start from, whether it is the classifier, the prefix its paths
    take)."""
    top = _children(graph.nodes[0])
    if "model" in top:
        return top["model"], True, ""
    if "layer_with_weights-0" in top and "layer_with_weights-1" in top:
        return 0, True, ""  # a SavedModel: the classifier is the root
    if "backbone" in top:
        return top["backbone"], False, BACKBONE
    raise WeightsError(
        f"{prefix}: no MoViNet model in this checkpoint (its top objects are "
        f"{', '.join(sorted(top)) or 'none'}; a Model Garden checkpoint has model/ or backbone/)"
    )


def _variable_paths(graph, root: int) -> dict[str, str]:
    """path from `root` -> checkpoint key, for every variable reachable from it, each by its
    shortest path (on a tie, the first in the object graph's order: the path TensorFlow
    names the variable by when it writes the checkpoint)."""
    paths: dict[str, str] = {}
    seen = {root}
    queue = deque([(root, "")])
    while queue:
        node_id, path = queue.popleft()
        node = graph.nodes[node_id]
        for attribute in node.attributes:
            if attribute.name == "VARIABLE_VALUE" and path:
                paths[path.rstrip("/")] = attribute.checkpoint_key
        for name, child in _children(node).items():
            if child in seen or _ALIASES.match(name):
                continue
            seen.add(child)
            queue.append((child, f"{path}{name}/"))
    return paths
