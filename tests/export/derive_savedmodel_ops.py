"""Prints the TensorFlow ops of every SavedModel variant actrec exports, for every registered
backbone: `python tests/export/derive_savedmodel_ops.py` (a few minutes). Its output is
actrec.export.trust.savedmodel_ops.SIGNATURE_OPS; tests/export/test_savedmodel_ops.py checks
that the suite's exports need no op outside it.

Each variant's serving function is traced as `actrec export` traces it (clip model: one
stream of each modality, two streams fused; the online TSM's streaming step; the streaming
step of each clip family that streams, as `stream_network_ops`: MoViNet's), with random
weights at a small input size, and the ops of its graph and every function it calls are
collected (the variables' reads and the SavedModel's own nodes are the same for all).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from actrec.backbones.registry import (
    BACKBONES,
    CLIP_FAMILIES,
    SHIFT_BLOCKS,
    backbone_spec,
)
from actrec.config.recipe import DataConfig, ModelConfig
from actrec.data.input.clip_spec import clip_spec
from actrec.export.serving import build_serving_function, input_signature
from actrec.export.streaming_export import build_streaming_serving
from actrec.export.streams import ExportedStream
from actrec.export.trust.savedmodel_ops import SAVED_MODEL_FILE, SAVER_OPS, graph_def_ops
from actrec.models.factory import build_model
from actrec.models.streaming import streaming_state_shapes


def _recipe_like(model: ModelConfig, data: DataConfig):
    @dataclasses.dataclass(frozen=True)
    class Recipe:
        model: ModelConfig
        data: DataConfig

    return Recipe(model, data)


def traced_ops(function, signature, networks) -> set[str]:
    """The ops of `function` traced, and of the SavedModel tf.saved_model.save writes of it
    (as actrec.export.model_writers does): its library also holds the gradient functions of
    the custom gradients the network uses (Keras's swish / hard-swish: Square, Sum,
    ZerosLike), which the check reaches; the saver's own functions left out (SAVER_OPS)."""
    import tempfile

    import tensorflow as tf
    from tensorflow.core.protobuf import saved_model_pb2

    concrete = tf.function(function, input_signature=signature, autograph=False)
    ops = graph_def_ops(concrete.get_concrete_function().graph.as_graph_def())
    module = tf.Module()
    module.networks, module.serve = list(networks), concrete  # their variables tracked
    with tempfile.TemporaryDirectory() as folder:
        tf.saved_model.save(module, folder, signatures={"serving_default": module.serve})
        saved = saved_model_pb2.SavedModel.FromString(
            (Path(folder) / SAVED_MODEL_FILE).read_bytes()
        )
    for meta_graph in saved.meta_graphs:  # its functions (the loader runs no graph node)
        library = meta_graph.graph_def.library.function
        ops |= {node.op for function in library for node in function.node_def} - SAVER_OPS
    return ops


def variant_ops(backbone: str, crop: int) -> set[str]:
    ops: set[str] = set()
    architectures = ["tsn"]
    if backbone_spec(backbone).shift_family in SHIFT_BLOCKS:
        architectures.append("tsm")
    for architecture in architectures:
        streams = []
        for modality, new_length, sampling in (("rgb", 1, "dense"), ("flow", 2, "tsn")):
            data = DataConfig(
                modality=modality,
                num_segments=2,
                new_length=new_length,
                crop_size=crop,
                scale_size=crop + 8,
                sampling=sampling,  # dense: its indices wrap around (FloorMod)
            )
            model = ModelConfig(architecture=architecture, backbone=backbone, weights="none")
            recipe = _recipe_like(model, data)
            network = build_model(model, data, 5)
            stream = ExportedStream(clip_spec(recipe, False), network)
            streams.append(stream)
            serve = build_serving_function([stream], [str(i) for i in range(5)], 5)
            ops |= traced_ops(serve, input_signature([stream]), [network])
        serve = build_serving_function(streams, [str(i) for i in range(5)], 5, (1.0, 1.5))
        ops |= traced_ops(serve, input_signature(streams), [s.model for s in streams])
        if architecture == "tsm":
            model = ModelConfig(
                architecture="tsm", backbone=backbone, weights="none", shift_direction="online"
            )
            data = DataConfig(num_segments=2, crop_size=crop, scale_size=crop + 8)
            network = build_model(model, data, 5)
            spec = clip_spec(_recipe_like(model, data), False)
            serve, signature = build_streaming_serving(
                network, spec, streaming_state_shapes(network)
            )
            ops |= traced_ops(serve, signature, [network])
    return ops


def stream_network_ops(architecture: str, backbone: str, crop: int = 32) -> set[str]:
    """The ops of a causal clip network's streaming step (a MoViNet `_stream` size)."""
    model = ModelConfig(architecture=architecture, backbone=backbone, weights="none")
    data = DataConfig(
        num_segments=2, crop_size=crop, scale_size=crop + 8, sampling="dense", frame_interval=2
    )
    network = build_model(model, data, 5)
    spec = clip_spec(_recipe_like(model, data), False)
    serve, signature = build_streaming_serving(network, spec, streaming_state_shapes(network))
    return traced_ops(serve, signature, [network])


def streaming_clip_networks() -> list[tuple[str, str]]:
    """(architecture, backbone) of every clip network that streams, its family's test size
    only (the ops do not depend on the size)."""
    return [
        (family.clip_architecture, network.name)
        for family in CLIP_FAMILIES.values()
        if family.clip_stream
        for network in family.clip_networks
        if getattr(network, "streams", False) and network.name.startswith("test_")
    ]


if __name__ == "__main__":
    names = sys.argv[1:] or list(BACKBONES)
    every = set()
    if not sys.argv[1:]:
        for architecture, backbone in streaming_clip_networks():
            every |= stream_network_ops(architecture, backbone)
            print(backbone, len(every), sorted(every), file=sys.stderr, flush=True)
    for name in names:
        crop = 96 if name == "inception_v3" else 64
        ops = variant_ops(name, crop)
        print(name, len(ops), sorted(ops - every), file=sys.stderr, flush=True)
        every |= ops
    print(sorted(every))
