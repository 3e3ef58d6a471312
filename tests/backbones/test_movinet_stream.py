"""MoViNet's own behaviour without the reference: the causal network's stream step equals
its clip model (frame by frame, in pieces, on every prefix), the states it keeps, the
recipe architecture, and the `.keras` file under JAX and PyTorch (test_movinet: three
bottlenecks, every weight drawn from a seed)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
from movinet_weights import seeded

from actrec.backbones.movinet.build import movinet_classifier
from actrec.backbones.movinet.spec import TEST_SPEC, stream_settings
from actrec.backbones.movinet.stream import initial_states, stream_state_shapes, stream_step
from actrec.config.files import load_recipe
from actrec.config.overrides import with_settings
from actrec.config.validate import validate_recipe
from actrec.errors import ConfigError
from actrec.models.factory import build_model, nested_batch_normalization_layers

TOLERANCE = 1e-5
STREAM = stream_settings("test_movinet")
POSITIONAL = dataclasses.replace(STREAM, positional_encoding=True)
"""The stream settings with the positional encoding (A3-A5's)."""


def clips(frames: int = 5, count: int = 2) -> np.ndarray:
    return np.random.default_rng(1).uniform(0, 1, (count, frames, 32, 40, 3)).astype("float32")


@pytest.fixture(scope="module")
def causal_network():
    """POSITIONAL's network on 5 frames."""
    return seeded(movinet_classifier(TEST_SPEC, 5, POSITIONAL, num_frames=5, image_size=(32, 40)))


@pytest.mark.parametrize("int8", [False, True], ids=["float", "int8"])
def test_the_tflite_tracing_forms_compute_the_same_network(causal_network, int8):
    """Traced for a TFLite model (the skip's pool as TensorFlow's op; int8: hard swish as
    three ops, one shared frame-count division: actrec.backbones.tflite_forms), the network
    gives its logits within float rounding, on the whole clip and step by step; outside
    the context, the usual forms."""
    import tensorflow as tf

    from actrec.backbones.tflite_forms import for_int8, for_tflite, traced_for_tflite

    clip = clips()
    usual = np.asarray(causal_network(clip))
    step = tf.function(stream_step(causal_network))  # traced once, inside the context
    states = initial_states(causal_network, 2)
    with traced_for_tflite(int8=int8):
        assert for_tflite() and for_int8() == int8
        traced = np.asarray(tf.function(causal_network)(clip))
        for index in range(clip.shape[1]):
            stepped, states = step(clip[:, index : index + 1], states)
    assert not for_tflite() and not for_int8()
    np.testing.assert_allclose(traced, usual, atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose(np.asarray(stepped), usual, atol=TOLERANCE, rtol=0)
    assert np.abs(usual[0] - usual[1]).max() > 100 * TOLERANCE


def test_the_stream_frame_by_frame_and_in_pieces_equals_the_causal_clip(causal_network):
    clip = clips()
    logits = np.asarray(causal_network(clip))
    step = stream_step(causal_network)
    states = initial_states(causal_network, 2)
    for index in range(5):
        frame_logits, states = step(clip[:, index : index + 1], states)
    np.testing.assert_allclose(np.asarray(frame_logits), logits, atol=1e-6, rtol=0)
    states = initial_states(causal_network, 2)
    for start, stop in ((0, 2), (2, 5)):  # pieces of 2 and 3 frames
        piece_logits, states = step(clip[:, start:stop], states)
    np.testing.assert_allclose(np.asarray(piece_logits), logits, atol=1e-6, rtol=0)
    assert np.asarray(states["state_frame_count"]).tolist() == [[5.0], [5.0]]
    assert np.abs(logits[0] - logits[1]).max() > 100 * TOLERANCE


def test_each_step_is_the_clip_model_on_the_frames_so_far(causal_network):
    """Step t's logits are the causal classifier's on frames 0..t (its cumulative pooling
    and causal padding look at nothing later)."""
    clip = clips()
    prefix = movinet_classifier(TEST_SPEC, 5, POSITIONAL, num_frames=3, image_size=(32, 40))
    prefix.set_weights(causal_network.get_weights())
    step, states = stream_step(causal_network), initial_states(causal_network, 2)
    for index in range(3):
        frame_logits, states = step(clip[:, index : index + 1], states)
    np.testing.assert_allclose(np.asarray(frame_logits), np.asarray(prefix(clip[:, :3])), atol=1e-6)


def test_the_states_are_each_buffer_and_pool(causal_network):
    shapes = stream_state_shapes(causal_network)
    assert shapes == {
        "state_block0_layer0_stream_buffer": (2, 8, 10, 16),  # (2+1)D: after the stride
        "state_block0_layer0_pool_buffer": (1, 1, 1, 16),
        "state_block1_layer0_stream_buffer": (4, 4, 5, 24),
        "state_block1_layer0_pool_buffer": (1, 1, 1, 24),
        "state_block1_layer1_stream_buffer": (2, 4, 5, 24),
        "state_block1_layer1_pool_buffer": (1, 1, 1, 24),
        "state_head_pool_buffer": (1, 1, 1, 32),
        "state_frame_count": (1,),
    }


def test_a_base_network_does_not_stream():
    base = movinet_classifier(TEST_SPEC, 3, num_frames=2, image_size=(32, 32))
    with pytest.raises(ConfigError, match="is not a causal MoViNet: only a causal one"):
        stream_step(base)


def test_a_base_network_converts_to_tflite_and_onnx_with_keras_outputs():
    """A base MoViNet's depthwise 3D convolutions (actrec: depthwise 2D ones summed over the
    temporal taps, not Keras's grouped Conv3D, which TFLite has no kernel for and which
    tf2onnx leaves as an XLA call) convert to both formats and give Keras's logits."""
    import tensorflow as tf

    from actrec.export.formats.onnx import OnnxRunner
    from actrec.export.formats.onnx import converted as onnx_model
    from actrec.export.tflite_flatbuffers import TfliteRunner
    from actrec.export.tflite_flatbuffers import converted as tflite_model

    base = seeded(movinet_classifier(TEST_SPEC, 5, num_frames=5, image_size=(32, 40)), seed=2)
    # bottlenecks whose depthwise convolution spans frames: a grouped Conv3D in Keras terms
    assert any(kernel[0] > 1 for stage in TEST_SPEC.stages for kernel in stage.kernel_sizes)
    clip = clips(count=1)
    logits = np.asarray(base(clip))
    signature = [tf.TensorSpec([1, 5, 32, 40, 3], tf.float32, name="clip")]

    def function(x):
        return {"logits": base(x, training=False)}

    tflite = TfliteRunner(content=tflite_model(function, signature, [base], "none"))
    onnx = OnnxRunner(onnx_model(function, signature, 17))
    for runner, name in ((tflite, next(iter(tflite.input_details))), (onnx, onnx.input_names[0])):
        outputs = np.asarray(runner.run({name: clip})["logits"])
        np.testing.assert_allclose(outputs, logits, atol=1e-4, rtol=0)
    assert np.ptp(logits) > 100 * 1e-4  # the logits are not all alike


def test_a_recipe_builds_movinet_with_frames_in_0_255():
    recipe = with_settings(
        load_recipe("synthetic-rgb"),
        {"model.architecture": "movinet", "model.backbone": "test_movinet_stream",
         "model.weights": "none", "data.num_segments": 4},
    )  # fmt: skip
    validate_recipe(recipe)
    model = seeded(build_model(recipe.model, recipe.data, 5))
    assert model.inputs[0].name == "frames" and model.output_shape == (None, 5)
    frames = np.random.default_rng(2).uniform(0, 255, (1, *model.input_shape[1:])).astype("float32")
    plain = movinet_classifier(
        TEST_SPEC, 5, STREAM, num_frames=4, image_size=model.input_shape[2:4]
    )
    plain.set_weights(model.get_weights())
    np.testing.assert_allclose(
        np.asarray(model(frames)), np.asarray(plain(frames / 255.0)), atol=1e-6
    )
    step, states = stream_step(model), initial_states(model, 1)
    for index in range(4):
        frame_logits, states = step(frames[:, index : index + 1], states)
    np.testing.assert_allclose(np.asarray(frame_logits), np.asarray(model(frames)), atol=1e-6)
    with pytest.raises(ConfigError, match=r"drop_path_rate and model\.remat are not available"):
        build_model(dataclasses.replace(recipe.model, drop_path_rate=0.1), recipe.data, 5)
    # The recipe's BatchNorm momentum reaches the BatchNorms inside MoViNet's convolutions
    # (None keeps the Model Garden's 0.99).
    for momentum, expected in ((None, 0.99), (0.9, 0.9), (0.5, 0.5)):
        chosen = dataclasses.replace(recipe.model, batch_norm_momentum=momentum)
        norms = nested_batch_normalization_layers(build_model(chosen, recipe.data, 5))
        assert len(norms) > 10 and {norm.momentum for norm in norms} == {expected}


_LOADER = """
import json, sys
import keras
import numpy as np
from actrec.models.keras_file import load_segment_model
from actrec.backbones.movinet.stream import initial_states, stream_step

model = load_segment_model(sys.argv[1])
clips = np.load(sys.argv[2])
logits = model.predict(clips, verbose=0)  # one compiled graph (JAX: jit)
step, states = stream_step(model), initial_states(model, len(clips))
if keras.backend.backend() == "jax":  # op by op, JAX compiles every op of every step
    import jax

    step = jax.jit(step)
for index in range(clips.shape[1]):
    frame_logits, states = step(clips[:, index : index + 1], states)
print("BACKEND", keras.backend.backend(), json.dumps([logits.tolist(),
      keras.ops.convert_to_numpy(frame_logits).tolist()]))
"""


@pytest.fixture(scope="module")
def saved_network(causal_network, tmp_path_factory):
    folder = tmp_path_factory.mktemp("movinet-backends")
    clip = clips()
    causal_network.save(folder / "movinet.keras")
    np.save(folder / "clips.npy", clip)
    return folder / "movinet.keras", folder / "clips.npy", np.asarray(causal_network(clip))


def test_the_keras_file_round_trips(saved_network):
    path, clips_file, logits = saved_network
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(np.asarray(loaded(np.load(clips_file))), logits, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_the_keras_file_and_its_stream_agree_under_the_backend(saved_network, backend, tmp_path):
    path, clips_file, logits = saved_network
    environment = {**os.environ, "KERAS_BACKEND": backend, "JAX_PLATFORMS": "cpu"}
    finished = subprocess.run(
        [sys.executable, "-c", _LOADER, str(path), str(clips_file)],
        capture_output=True, text=True, env=environment, cwd=tmp_path,
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-3000:]
    line = next(line for line in finished.stdout.splitlines() if line.startswith("BACKEND"))
    _, loaded_backend, payload = line.split(" ", 2)
    got_logits, got_stream = (np.asarray(value) for value in json.loads(payload))
    assert loaded_backend == backend
    np.testing.assert_allclose(got_logits, logits, atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose(got_logits[0] - got_logits[1], logits[0] - logits[1], atol=TOLERANCE)
    np.testing.assert_allclose(got_stream, logits, atol=TOLERANCE, rtol=0)
