"""Two-stream fusion: weighted average of logits (the official evaluations) or of softmax
scores, TSN's 1:1.5 by default."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from actrec.errors import ConfigError
from actrec.models.fusion import build_two_stream_model
from actrec.models.keras_file import load_segment_model
from actrec.models.score_fusion import fuse_scores
from actrec.models.segment_model import build_segment_model

SIZE = 32


def softmax(logits):
    exponentials = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return exponentials / exponentials.sum(axis=-1, keepdims=True)


def test_fuse_scores_weights_rgb_one_and_flow_one_and_a_half():
    rgb = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    flow = np.array([[0.1, 0.8, 0.1], [0.2, 0.2, 0.6]])
    fused = fuse_scores([rgb, flow])
    np.testing.assert_allclose(fused, (rgb + 1.5 * flow) / 2.5)
    np.testing.assert_allclose(fused[0], [0.34, 0.56, 0.10])
    np.testing.assert_allclose(fuse_scores([rgb, flow], (1, 0)), rgb)


def test_fuse_scores_rejects_bad_weights_and_shapes():
    scores = [np.ones((2, 3)), np.ones((2, 3))]
    with pytest.raises(ConfigError, match="2 fusion weights"):
        fuse_scores(scores, (1.0,))
    with pytest.raises(ConfigError, match="non-negative"):
        fuse_scores(scores, (1.0, -1.0))
    with pytest.raises(ConfigError, match="one shape"):
        fuse_scores([np.ones((2, 3)), np.ones((2, 4))])


@pytest.fixture(scope="module")
def streams():
    rgb = build_segment_model("mobilenet_v2", 4, num_segments=2, input_size=SIZE, weights=None)
    flow = build_segment_model(
        "mobilenet_v2",
        4,
        modality="flow",
        new_length=2,
        num_segments=2,
        input_size=SIZE,
        weights=None,
    )
    # Give the classifiers weights that make the scores far from uniform and different.
    rng = np.random.default_rng(5)
    for model in (rgb, flow):
        kernel, bias = model.get_layer("classifier").get_weights()
        model.get_layer("classifier").set_weights(
            [rng.normal(0, 1, kernel.shape), rng.normal(0, 2, bias.shape)]
        )
    return rgb, flow


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "rgb": rng.uniform(0, 255, (3, 2, SIZE, SIZE, 3)).astype("float32"),
        "flow": rng.uniform(0, 255, (3, 2, SIZE, SIZE, 4)).astype("float32"),
    }


@pytest.mark.parametrize("average", ["logits", "softmax"])
def test_two_stream_model_fuses_the_streams_logits_or_softmax(streams, tmp_path, average):
    rgb, flow = streams
    batch = inputs()
    rgb_logits = keras.ops.convert_to_numpy(rgb(batch["rgb"]))
    flow_logits = keras.ops.convert_to_numpy(flow(batch["flow"]))
    assert np.abs(softmax(rgb_logits) - softmax(flow_logits)).max() > 0.01
    for weights in ((1.0, 1.5), (2.0, 1.0)):
        model = build_two_stream_model(rgb, flow, weights, average=average)
        fused = keras.ops.convert_to_numpy(model(batch))
        if average == "logits":  # TSN eval_scores.py / TSM test_models.py: pre-softmax
            expected = softmax((weights[0] * rgb_logits + weights[1] * flow_logits) / sum(weights))
        else:
            expected = (weights[0] * softmax(rgb_logits) + weights[1] * softmax(flow_logits)) / sum(
                weights
            )
        np.testing.assert_allclose(fused, expected, rtol=1e-5, atol=1e-6)
    path = tmp_path / "two_stream.keras"
    model.save(path)
    reloaded = load_segment_model(path)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(reloaded(batch)), keras.ops.convert_to_numpy(model(batch))
    )
    assert reloaded.get_layer("fusion").stream_weights == [2.0, 1.0]
    assert reloaded.get_layer("fusion").average == average


def test_a_fusion_layer_saved_without_an_average_reloads_as_softmax_fusion():
    from actrec.models.fusion import WeightedScoreFusion

    config = WeightedScoreFusion((1.0, 1.5), "logits").get_config()
    del config["average"]  # what exports from before the choice hold
    assert WeightedScoreFusion.from_config(config).average == "softmax"


def test_streams_must_share_their_classes(streams):
    rgb, _ = streams
    other = build_segment_model(
        "mobilenet_v2", 5, modality="flow", num_segments=2, input_size=SIZE, weights=None
    )
    with pytest.raises(ConfigError, match="4 classes and the flow model 5"):
        build_two_stream_model(rgb, other)
