"""Online TSM streamed frame by frame equals the same model run on the whole clip."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from actrec.errors import ConfigError
from actrec.models.segment_model import build_segment_model, segment_backbone
from actrec.models.streaming import build_streaming_model, reset_streaming_state

SIZE = 32
SEGMENTS = 4


def per_segment_logits(model, frames):
    """The clip model's logits for every segment before the consensus, [B, T, K]."""
    preprocessed = model.get_layer("preprocessing")(frames)
    merged = keras.ops.reshape(preprocessed, (-1, *frames.shape[2:]))  # [B*T, H, W, C]
    features = segment_backbone(model)(merged, training=False)  # [B*T, F]
    logits = keras.ops.convert_to_numpy(model.get_layer("classifier")(features))  # [B*T, K]
    return logits.reshape(frames.shape[0], frames.shape[1], -1)  # [B, T, K]


@pytest.fixture(scope="module")
def online_tsm():
    model = build_segment_model(
        "resnet50",
        6,
        architecture="tsm",
        shift_direction="online",
        num_segments=SEGMENTS,
        input_size=SIZE,
        weights=None,
    )
    rng = np.random.default_rng(0)
    kernel, bias = model.get_layer("classifier").get_weights()
    model.get_layer("classifier").set_weights([rng.normal(0, 1, kernel.shape), bias])
    return model


def test_streaming_steps_equal_the_clip_model_segment_by_segment(online_tsm):
    frames = np.random.default_rng(1).uniform(0, 255, (2, SEGMENTS, SIZE, SIZE, 3))
    frames = frames.astype("float32")
    expected = per_segment_logits(online_tsm, frames)  # [B, T, K]
    streaming = build_streaming_model(online_tsm, batch_size=2)
    for _ in range(2):  # a second video after a reset starts from a clean state
        reset_streaming_state(streaming)
        steps = [
            keras.ops.convert_to_numpy(streaming.predict_on_batch(frames[:, t]))
            for t in range(SEGMENTS)
        ]
        np.testing.assert_allclose(np.stack(steps, axis=1), expected, rtol=1e-4, atol=1e-4)
    # The state matters: the same frame after another frame gives another output.
    assert np.abs(expected[:, 1] - expected[:, 0]).max() > 1e-3
    reset_streaming_state(streaming)
    first = keras.ops.convert_to_numpy(streaming.predict_on_batch(frames[:, 1]))
    assert np.abs(first - expected[:, 1]).max() > 1e-4


def test_streaming_shares_the_trained_weights(online_tsm):
    streaming = build_streaming_model(online_tsm)
    classifier = online_tsm.get_layer("classifier")
    assert streaming.get_layer("classifier") is classifier
    trainable = {id(weight) for weight in online_tsm.trainable_weights}
    assert {id(weight) for weight in streaming.trainable_weights} == trainable


def test_only_online_tsm_streams():
    model = build_segment_model(
        "mobilenet_v2", 3, architecture="tsm", num_segments=2, input_size=SIZE, weights=None
    )
    with pytest.raises(ConfigError, match=r"model\.shift_direction=online"):
        build_streaming_model(model)


def test_stateless_steps_equal_the_clip_model_and_start_from_zero_states(online_tsm):
    """The export's step: the state goes in and out as tensors, any batch size."""
    from actrec.models.streaming import streaming_state_shapes, streaming_step

    frames = np.random.default_rng(2).uniform(0, 255, (3, SEGMENTS, SIZE, SIZE, 3))
    frames = frames.astype("float32")
    expected = per_segment_logits(online_tsm, frames)  # [B, T, K]
    shapes = streaming_state_shapes(online_tsm)
    assert len(shapes) == 16  # ResNet-50: a shift in every block's residual branch
    # conv2_x (the first stage): 64-channel branch input at 1/4 of the frame side
    assert next(iter(shapes.values())) == (SIZE // 4, SIZE // 4, 64 // 8)
    step = streaming_step(online_tsm)
    states = {name: np.zeros((3, *shape), "float32") for name, shape in shapes.items()}
    for t in range(SEGMENTS):
        logits, states = step(frames[:, t], states)
        assert set(states) == set(shapes)
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(logits), expected[:, t], rtol=1e-4, atol=1e-4
        )
    with pytest.raises(ConfigError, match=r"model\.shift_direction=online"):
        streaming_step(
            build_segment_model(
                "mobilenet_v2", 3, architecture="tsm", num_segments=2, input_size=SIZE, weights=None
            )
        )
