"""VideoMAE on every Keras backend: a small random network (every weight drawn from a seed,
biases and norms included) built and run in TensorFlow, saved as a `.keras` file and loaded
in a fresh process under KERAS_BACKEND=jax and one under torch: the logits, the difference
between two clips' logits and the pooled features within 1e-5 of TensorFlow's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from actrec.backbones.videomae.build import feature_model, videomae_classifier
from actrec.backbones.videomae.spec import VideoMAESpec

TOLERANCE = 1e-5
SPEC = VideoMAESpec("videomae_tiny", width=32, depth=2, heads=4, mlp_width=64, layer_scale=0.5)

_LOADER = """
import json, sys
import keras
import numpy as np
import actrec.backbones.videomae.layers  # registers VideoMAE's layers
from actrec.backbones.videomae.build import feature_model

model = keras.saving.load_model(sys.argv[1])
clips = np.load(sys.argv[2])
logits = keras.ops.convert_to_numpy(model(clips))
features = keras.ops.convert_to_numpy(feature_model(model)(clips))
print("BACKEND", keras.backend.backend(), json.dumps([logits.tolist(), features.tolist()]))
"""


@pytest.fixture(scope="module")
def saved_network(tmp_path_factory):
    """(the .keras file, the clips file, TensorFlow's logits, TensorFlow's features)."""
    folder = tmp_path_factory.mktemp("videomae-backends")
    rng = np.random.default_rng(0)
    network = videomae_classifier(SPEC, 5, num_frames=4, image_size=(32, 32), drop_path_rate=0.1)
    network.set_weights([rng.normal(0, 0.3, w.shape).astype("float32") for w in network.weights])
    clips = rng.normal(size=(2, 4, 32, 32, 3)).astype("float32")
    logits = keras.ops.convert_to_numpy(network(clips))
    features = keras.ops.convert_to_numpy(feature_model(network)(clips))
    network.save(folder / "videomae.keras")
    np.save(folder / "clips.npy", clips)
    return folder / "videomae.keras", folder / "clips.npy", logits, features


def test_the_network_round_trips_its_config_and_drops_paths_only_in_training(saved_network):
    path, clips_file, logits, _ = saved_network
    clips = np.load(clips_file)
    loaded = keras.saving.load_model(path)
    assert loaded.get_config() == keras.saving.load_model(path).get_config()
    np.testing.assert_allclose(keras.ops.convert_to_numpy(loaded(clips)), logits, atol=TOLERANCE)
    trained = [keras.ops.convert_to_numpy(loaded(clips, training=True)) for _ in range(4)]
    assert max(np.abs(t - logits).max() for t in trained) > 1e-3  # stochastic depth acts


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_the_keras_file_loads_and_agrees_under_the_backend(saved_network, backend, tmp_path):
    path, clips_file, logits, features = saved_network
    environment = {**os.environ, "KERAS_BACKEND": backend, "JAX_PLATFORMS": "cpu"}
    finished = subprocess.run(
        [sys.executable, "-c", _LOADER, str(path), str(clips_file)],
        capture_output=True, text=True, env=environment, cwd=tmp_path,
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-3000:]
    line = next(line for line in finished.stdout.splitlines() if line.startswith("BACKEND"))
    _, loaded_backend, payload = line.split(" ", 2)
    got_logits, got_features = (np.asarray(value) for value in json.loads(payload))
    assert loaded_backend == backend
    np.testing.assert_allclose(got_logits, logits, atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose(got_logits[0] - got_logits[1], logits[0] - logits[1], atol=TOLERANCE)
    np.testing.assert_allclose(got_features, features, atol=TOLERANCE, rtol=0)
    assert np.abs(logits[0] - logits[1]).max() > 100 * TOLERANCE
