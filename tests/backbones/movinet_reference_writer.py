"""Writes the Model Garden's own MoViNets as references for actrec's conversion: run by the
reference environment's Python (tf-models-official, TensorFlow and tf_keras; never in
actrec's process), `python movinet_reference_writer.py OUT`.

For each case (a size, base or stream) it builds tf-models-official's Movinet and
MovinetClassifier, draws EVERY variable from a seed (the Model Garden starts each ReZero
scale at 0, which would switch the residual branches off), writes its checkpoint(s) and
saves, on two fixed clips, the logits, the backbone's endpoints and (streams) the
frame-by-frame logits of the Model Garden's own stream. OUT/cases.json lists them.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np
import tensorflow as tf
from official.projects.movinet.modeling import movinet, movinet_model

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


def drawn_value(variable, rng: np.random.Generator) -> np.ndarray:
    """A seeded value for every variable, scaled so that activations stay of order one
    (endpoints of a few units, logits of about one whose two clips differ by 1e-2, so that
    float32 rounding stays below 1e-5): kernels normal(0, 1.3 / sqrt(fan-in)) (the
    classifier head's 1 / sqrt(fan-in)), BatchNorm
    gammas in [0.8, 1.3], variances in [1, 2], means, betas and biases normal(0, 0.1),
    ReZero and positional scales uniform in [0.5, 1]."""
    name, shape = variable.name, tuple(variable.shape)
    if "moving_variance" in name:
        return rng.uniform(1.0, 2.0, shape)
    if "gamma" in name:
        return rng.uniform(0.8, 1.3, shape)
    if not shape:
        return rng.uniform(0.5, 1.0, shape)
    if "beta" in name or "moving_mean" in name or "bias" in name:
        return rng.normal(0.0, 0.1, shape)
    fan_in = np.prod(shape[:2]) if "depthwise_kernel" in name else np.prod(shape[:-1])
    scale = 1.0 if "classifier_head" in name else 1.3
    return rng.normal(0.0, scale / np.sqrt(fan_in), shape)


def build(model_id: str, settings: dict, external_states: bool):
    backbone = movinet.Movinet(model_id=model_id, use_external_states=external_states, **settings)
    model = movinet_model.MovinetClassifier(
        backbone, num_classes=NUM_CLASSES, output_states=external_states
    )
    return backbone, model


def write_case(out: Path, name: str, model_id: str, settings: dict, files, seed: int) -> dict:
    folder = out / name
    backbone, model = build(model_id, settings, external_states=settings["causal"])
    clips = np.random.default_rng(100).uniform(0, 1, CLIP_SHAPE).astype(np.float32)
    if settings["causal"]:
        states = model.init_states(tf.shape(clips))
        model({**states, "image": clips})
    else:
        model.build(CLIP_SHAPE)
    rng = np.random.default_rng(seed)
    if not any("classifier_head" in variable.name for variable in model.weights):
        raise SystemExit("no classifier_head variable: the draw's names do not fit this release")
    for variable in model.weights:
        variable.assign(drawn_value(variable, rng).astype(variable.dtype.as_numpy_dtype))
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
    folder.mkdir(parents=True, exist_ok=True)
    np.savez(folder / "outputs.npz", **outputs)
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
        written["savedmodel"] = str(folder / "savedmodel")
    files = {kind: str(Path(path).relative_to(out)) for kind, path in written.items()}
    case = {"model_id": model_id, "settings": settings, "files": files, "seed": seed}
    if settings["causal"]:  # the stream's states for one frame: name -> shape, batch first
        shapes = model.init_states(tf.constant([1, 1, *CLIP_SHAPE[2:]]))
        case["state_shapes"] = {name: list(value.shape) for name, value in shapes.items()}
    return case


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    cases = {}
    for seed, (name, model_id, settings, files) in enumerate(CASES):
        started = time.monotonic()
        cases[name] = write_case(out, name, model_id, settings, files, seed)
        print(f"{name}: {time.monotonic() - started:.0f} s", flush=True)
    specs = {
        key: [[type(block).__name__, dataclasses.asdict(block)] for block in blocks]
        for key, blocks in movinet.BLOCK_SPECS.items()
    }
    (out / "block_specs.json").write_text(json.dumps(specs))
    (out / "cases.json").write_text(json.dumps(cases, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
