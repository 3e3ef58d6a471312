"""Writes the Model Garden's own MoViNets as references for actrec's conversion: run by the
reference environment's Python (tf-models-official, TensorFlow and tf_keras; never in
actrec's process) through `python tests/movinet_reference.py`, which makes that
environment; `python movinet_reference_writer.py ASSET` itself.

For each case (a size, base or stream) it builds tf-models-official's Movinet and
MovinetClassifier, draws EVERY variable from a seed (tests/movinet_reference_values.py; the Model
Garden starts each ReZero scale at 0, which would switch the residual branches off), writes
its checkpoint(s) with the Model Garden's own calls and computes, on two fixed clips, the
logits, the backbone's endpoints and (streams) the frame-by-frame logits of the Model
Garden's own stream. The checkpoints (174 MB) are not kept: ASSET (about 1 MB,
tests/assets/movinet-reference) keeps what the suite needs to write them again, read back
from each written file (every key's variable name, shape and digest, the object graph,
checked there against the rule), and the outputs.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import tensorflow as tf
from movinet_reference_values import PIN, drawn_value, tensor_digest, writer_digest
from official.projects.movinet.modeling import movinet, movinet_model
from tensorflow.core.protobuf import trackable_object_graph_pb2

NUM_CLASSES = 7
CLIP_SHAPE = (2, 6, 36, 44, 3)
"""Two clips of 6 frames (past the 5-frame kernels) of 36 x 44 pixels: odd sizes after
the strides test SAME padding, a non-square frame the order of the axes."""

BASE = dict(causal=False, conv_type="3d", se_type="3d", activation="swish",
            gating_activation="sigmoid", use_positional_encoding=False)  # fmt: skip
STREAM = dict(causal=True, conv_type="2plus1d", se_type="2plus3d", activation="hard_swish",
              gating_activation="hard_sigmoid", use_positional_encoding=False)  # fmt: skip
CASES = [
    ("a0_base", "a0", BASE, ("model", "model_backbone")),
    ("a0_stream", "a0", STREAM, ("model", "savedmodel")),
    ("a1_base", "a1", BASE, ("model",)),
    ("a1_stream", "a1", STREAM, ("model",)),
    ("a2_base", "a2", BASE, ("model",)),
    ("a2_stream", "a2", STREAM, ("model",)),
    ("a3_stream", "a3", {**STREAM, "use_positional_encoding": True}, ("model",)),
]
ENDPOINTS = ("stem", "block0_layer0", "block2_layer0", "block4_layer0", "head")
SAMPLED = 4096
"""An endpoint of more elements keeps this many, at fixed random places (their indices kept
beside them): every layer's error reaches many of them, and the asset stays small."""
GRAPH = "_CHECKPOINTABLE_OBJECT_GRAPH"


def build(model_id: str, settings: dict, external_states: bool):
    backbone = movinet.Movinet(model_id=model_id, use_external_states=external_states, **settings)
    model = movinet_model.MovinetClassifier(
        backbone, num_classes=NUM_CLASSES, output_states=external_states
    )
    return backbone, model


def write_case(out: Path, name, model_id, settings, files, seed: int, graphs: dict):
    """(the case's record, its outputs): its files written under out/NAME."""
    folder = out / name
    backbone, model = build(model_id, settings, external_states=settings["causal"])
    clips = np.random.default_rng(100).uniform(0, 1, CLIP_SHAPE).astype(np.float32)
    if settings["causal"]:
        states = model.init_states(tf.shape(clips))
        model({**states, "image": clips})
    else:
        model.build(CLIP_SHAPE)
    if not any("classifier_head" in variable.name for variable in model.weights):
        raise SystemExit("no classifier_head variable: the draw's names do not fit this release")
    for variable in model.weights:
        variable_name = variable.name.removesuffix(":0")
        variable.assign(drawn_value(seed, variable_name, tuple(variable.shape)))
    outputs = {"clips": clips}
    # One forward pass of the backbone, its classifier head on the pooled endpoint: the
    # Model Garden's Conv3D compiles with XLA on every eager call (a new tf.function each).
    # Each call runs inside one tf.function, traced once per input shape: the Conv3D's
    # compilation then happens once a trace instead of on every eager call.
    classifier_head = model.layers[-1]
    backbone_pass = tf.function(backbone)
    model_step = tf.function(model)
    if settings["causal"]:
        states = model.init_states(tf.shape(clips))
        endpoints, _ = backbone_pass({**states, "image": clips})
        frames = []
        states = model.init_states(tf.shape(clips[:, :1]))
        for index in range(clips.shape[1]):
            step, states = model_step({**states, "image": clips[:, index : index + 1]})
            frames.append(step.numpy())
        outputs["stream_logits"] = np.stack(frames, axis=1)  # [B, T, K]
    else:
        endpoints, _ = backbone_pass(clips)
    logits = classifier_head(endpoints["head"])
    outputs["logits"] = logits.numpy()
    for endpoint in ENDPOINTS:
        outputs[f"endpoint_{endpoint}"] = endpoints[endpoint].numpy()
    written = {}
    if "model" in files:
        written["model"] = tf.train.Checkpoint(model=model).write(str(folder / "model" / "ckpt-1"))
    if "model_backbone" in files:
        both = tf.train.Checkpoint(model=model, backbone=backbone)
        written["model_backbone"] = both.save(str(folder / "model_backbone" / "ckpt"))
        written["backbone"] = tf.train.Checkpoint(backbone=backbone).write(
            str(folder / "backbone" / "ckpt-1")
        )
    if "savedmodel" in files:
        import tf_keras

        tf_keras.models.save_model(model, str(folder / "savedmodel"))
        written["savedmodel"] = str(folder / "savedmodel" / "variables" / "variables")
    case = {"model_id": model_id, "settings": settings, "seed": seed, "files": {}}
    for kind, prefix in written.items():
        record = file_record(Path(prefix), seed, f"{name}/{kind}", graphs)
        case["files"][kind] = {"path": str(Path(prefix).relative_to(out)), **record}
    if settings["causal"]:  # the stream's states for one frame: name -> shape, batch first
        shapes = model.init_states(tf.constant([1, 1, *CLIP_SHAPE[2:]]))
        case["state_shapes"] = {name: list(value.shape) for name, value in shapes.items()}
    return case, outputs


def file_record(prefix: Path, seed: int, label: str, graphs: dict) -> dict:
    """What the suite needs to write the checkpoint at `prefix` again: key -> [variable
    name, shape, digest] for every float32 tensor (each checked against the rule),
    key -> value for the others (save_counter), its object graph into `graphs[label]`."""
    reader = tf.train.load_checkpoint(str(prefix))
    graph_bytes = reader.get_tensor(GRAPH)
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(graph_bytes)
    names = {
        attribute.checkpoint_key: attribute.full_name
        for node in graph.nodes
        for attribute in node.attributes
    }
    graphs[label] = np.frombuffer(graph_bytes, np.uint8)
    tensors, others = {}, {}
    for key, dtype in sorted(reader.get_variable_to_dtype_map().items()):
        if key == GRAPH:
            continue
        value = reader.get_tensor(key)
        if dtype != tf.float32:
            others[key] = [value.item(), dtype.name]
            continue
        digest = tensor_digest(value)
        if digest != tensor_digest(drawn_value(seed, names[key], value.shape)):
            raise SystemExit(f"{label}: {key} ({names[key]}) is not the rule's value")
        tensors[key] = [names[key], list(value.shape), digest]
    return {"tensors": tensors, "others": others}


def sampled_outputs(name: str, outputs: dict) -> dict:
    """The arrays kept of a case's outputs, under "NAME/...": logits as they are, each
    endpoint flattened and sampled (with "_at", its indices, and "_shape")."""
    kept = {}
    for key, value in outputs.items():
        if not key.startswith("endpoint_"):
            kept[f"{name}/{key}"] = value
            continue
        flat = value.reshape(-1)
        at = np.arange(flat.size)
        if flat.size > SAMPLED:
            at = np.sort(np.random.default_rng(7).choice(flat.size, SAMPLED, replace=False))
        kept[f"{name}/{key}"] = flat[at]
        kept[f"{name}/{key}_at"] = at.astype(np.uint32)
        kept[f"{name}/{key}_shape"] = np.asarray(value.shape, np.int64)
    return kept


def main(asset: Path) -> None:
    asset.mkdir(parents=True, exist_ok=True)
    cases, graphs, kept = {}, {}, {}
    with tempfile.TemporaryDirectory() as scratch:
        for seed, (name, model_id, settings, files) in enumerate(CASES):
            started = time.monotonic()
            case, outputs = write_case(Path(scratch), name, model_id, settings, files, seed, graphs)
            cases[name] = case
            kept["clips"] = outputs.pop("clips")
            kept.update(sampled_outputs(name, outputs))
            print(f"{name}: {time.monotonic() - started:.0f} s", flush=True)
    specs = {
        key: [[type(block).__name__, dataclasses.asdict(block)] for block in blocks]
        for key, blocks in movinet.BLOCK_SPECS.items()
    }
    (asset / "block_specs.json").write_text(json.dumps(specs))
    np.savez_compressed(asset / "outputs.npz", **kept)
    np.savez_compressed(asset / "object_graphs.npz", **graphs)
    manifest = {"writer": writer_digest(), "pin": PIN, "cases": cases}
    with gzip.open(asset / "cases.json.gz", "wt") as file:
        json.dump(manifest, file, indent=0)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
