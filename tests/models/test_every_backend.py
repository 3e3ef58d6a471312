"""Every backbone family's network on every Keras backend: built and run in TensorFlow,
saved as a `.keras` file, loaded by `load_segment_model` (which rebuilds it from its
config) in a fresh process under KERAS_BACKEND=jax and one under torch, and run on the same
two clips: the logits and the difference between the two clips' logits within 1e-5 of
TensorFlow's, relative to their size.

The cases come from the registry (tests/backbone_cases.py): the suite runs small networks,
ACTREC_EVERY_BACKBONE=families a member of every family, =all every registered backbone.

A random network's BatchNorm statistics (mean 0, variance 1) let its activations vanish
(logits of 1e-13): each BatchNorm takes the statistics of the clips once (momentum 0; its
variance floored), and the classifier weights of unit scale, so that the logits depend on
the clip."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from backbone_cases import SUITE_CASES, cases, family, input_size

from actrec.backbones.registry import BACKBONES, CLIP_FAMILIES, CLIP_NETWORKS
from actrec.config.recipe import DataConfig, ModelConfig

BACKENDS = ("jax", "torch")
TOLERANCE = 1e-5
SEGMENTS = 2
FLOW_LENGTH = 2
CLASSES = 5


def _with_clip_statistics(model, clips: np.ndarray, rng) -> None:
    """Each BatchNorm's moving statistics those of `clips` (one training-mode pass at
    momentum 0), the classifier's kernel drawn at unit scale."""
    import keras

    norms = [
        layer
        for layer in model._flatten_layers(include_self=False)
        if isinstance(layer, keras.layers.BatchNormalization)
    ]
    momenta = [layer.momentum for layer in norms]
    for layer in norms:
        layer.momentum = 0.0
    model(clips, training=True)
    for layer, momentum in zip(norms, momenta, strict=True):
        layer.momentum = momentum
        # a channel nearly constant over the few clips would divide by almost nothing and
        # turn float rounding into differences of whole percents: a floor on its variance
        variance = keras.ops.convert_to_numpy(layer.moving_variance)
        layer.moving_variance.assign(variance + variance.mean() + 1e-3)
    classifier = model.get_layer("classifier")
    kernel, bias = classifier.get_weights()
    classifier.set_weights([rng.normal(0, 1 / np.sqrt(len(kernel)), kernel.shape), bias])


def _saved_case(name: str, architecture: str, modality: str, folder: Path) -> dict:
    """Build, run and save one case in TensorFlow (its random numbers seeded by its name):
    {"key", "model", "arrays"}."""
    import keras

    from actrec.models.factory import build_model
    from actrec.models.segment_model import build_segment_model

    rng = np.random.default_rng(sum(map(ord, f"{name}-{architecture}-{modality}")))
    size = input_size(name)
    if architecture in CLIP_FAMILIES:  # as a recipe builds it: normalisation inside
        model = build_model(
            ModelConfig(architecture=architecture, backbone=name, weights="none", dropout=0.0),
            DataConfig(num_segments=SEGMENTS, crop_size=size),
            CLASSES,
        )
    else:
        model = build_segment_model(
            name, CLASSES, architecture=architecture, modality=modality, num_segments=SEGMENTS,
            new_length=FLOW_LENGTH if modality == "flow" else None, input_size=size,
            weights=None, dropout=0.0, partial_bn=False,
        )  # fmt: skip
    channels = model.inputs[0].shape[-1]
    # the statistics from clips of every brightness, the test on a bright and a dark one:
    # their logits differ by far more than rounding
    shape = (SEGMENTS, size, size, channels)
    statistics = [rng.uniform(0, high, shape) for high in (32, 64, 96, 128, 192, 255)]
    _with_clip_statistics(model, np.stack(statistics).astype("float32"), rng)
    clips = np.stack([rng.uniform(0, 255, shape), rng.uniform(0, 64, shape)]).astype("float32")
    # logits of unit size: the classifier (bias 0) is linear in its kernel
    classifier = model.get_layer("classifier")
    scale = np.abs(keras.ops.convert_to_numpy(model(clips, training=False))).max()
    kernel, bias = classifier.get_weights()
    classifier.set_weights([kernel / scale, bias])
    logits = keras.ops.convert_to_numpy(model(clips, training=False))
    assert model.get_config()["name"] == model.name  # the config the file is rebuilt from
    key = f"{name}-{architecture}-{modality}"
    paths = {part: folder / f"{key}.{part}" for part in ("keras", "npz")}
    model.save(paths["keras"])
    np.savez(paths["npz"], clips=clips, logits=logits)
    return {"key": key, "model": str(paths["keras"]), "arrays": str(paths["npz"])}


_LOADER = """
import json, sys
import keras
import numpy as np
from actrec.models.keras_file import load_segment_model

results = {}
for case in json.loads(sys.argv[1]):
    arrays = np.load(case["arrays"])
    model = load_segment_model(case["model"])
    logits = model.predict(arrays["clips"], verbose=0)  # one compiled graph (JAX: jit)
    results[case["key"]] = np.asarray(logits).tolist()
print("BACKEND", keras.backend.backend(), json.dumps(results))
"""


@pytest.fixture(scope="module")
def saved_cases(tmp_path_factory) -> list[dict]:
    folder = tmp_path_factory.mktemp("every-backend")
    return [_saved_case(*case, folder) for case in cases()]


def test_the_cases_cover_every_family():
    families = {family(name) for name in [*BACKBONES, *CLIP_NETWORKS]}
    assert {family(name) for name, _, _ in cases("families")} == families
    assert len(families) >= 10 and ("resnet50", "tsm", "rgb") in cases("families")
    assert len(cases("all")) > len(cases("families")) > len(SUITE_CASES)
    assert set(SUITE_CASES) <= set(cases("all")) and cases("suite") == list(SUITE_CASES)


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_family_loads_and_agrees_under_the_backend(backend, saved_cases, tmp_path):
    environment = {**os.environ, "KERAS_BACKEND": backend, "JAX_PLATFORMS": "cpu"}
    finished = subprocess.run(
        [sys.executable, "-c", _LOADER, json.dumps(saved_cases)],
        capture_output=True, text=True, env=environment, cwd=tmp_path,
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-3000:]
    line = next(line for line in finished.stdout.splitlines() if line.startswith("BACKEND"))
    _, loaded_backend, payload = line.split(" ", 2)
    assert loaded_backend == backend
    loaded = json.loads(payload)
    for case in saved_cases:
        expected = np.load(case["arrays"])["logits"]
        got = np.asarray(loaded[case["key"]])
        between = expected[1] - expected[0]  # what the clip changes: a random net's signal
        scale = np.abs(expected).max()
        sensitive = np.abs(between).max() > 10 * TOLERANCE * scale
        print(
            f"{backend} {case['key']}: {np.abs(got - expected).max() / scale:.1e} of the "
            f"logits; the clips change them by {np.abs(between).max() / scale:.1e}"
        )
        # EfficientNet's (B0-B3) random networks barely depend on their input (1e-5 of
        # their logits): their check is the logits alone (ACTREC_EVERY_BACKBONE only)
        assert scale == pytest.approx(1, rel=1e-5), case["key"]
        assert sensitive or case["key"].startswith("efficientnet_b"), case["key"]
        assert np.abs(got - expected).max() <= TOLERANCE * scale, (case["key"], backend)
        assert np.abs((got[1] - got[0]) - between).max() <= TOLERANCE * scale, case["key"]
