"""VideoMAE in training: stochastic depth and gradient checkpointing (remat), in a
tf.function step as actrec's training loop runs it."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from actrec.backbones.videomae.build import videomae_classifier
from actrec.backbones.videomae.spec import VideoMAESpec

SPEC = VideoMAESpec("videomae_tiny", width=32, depth=3, heads=4, mlp_width=64)
CLIPS = np.random.default_rng(0).normal(size=(4, 4, 32, 32, 3)).astype("float32")


def network(remat: bool):
    """The same weights every call: a network whose every block drops its branches with
    probability up to 0.5, drawn from seeds 7, 8, 9."""
    built = videomae_classifier(
        SPEC, 5, num_frames=4, image_size=(32, 32), drop_path_rate=0.5, remat=remat, seed=7
    )
    rng = np.random.default_rng(1)
    built.set_weights([rng.normal(0, 0.3, w.shape).astype("float32") for w in built.weights])
    return built


def training_step(model):
    """A traced step: the loss's gradients for every trainable weight."""

    @tf.function
    def step(clips):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(clips, training=True) ** 2)
        return loss, tape.gradient(loss, model.trainable_weights)

    return step


def op_count(step, op_type: str) -> int:
    """How many `op_type` nodes the traced step holds, its function library included."""
    graph = step.get_concrete_function(tf.TensorSpec(CLIPS.shape)).graph.as_graph_def()
    nodes = list(graph.node) + [n for f in graph.library.function for n in f.node_def]
    return sum(node.op == op_type for node in nodes)


@pytest.fixture(scope="module")
def steps():
    return {remat: training_step(network(remat)) for remat in (False, True)}


def test_remat_recomputes_each_block_and_gives_the_same_gradients(steps):
    """With remat the backward pass recomputes every block (its attention's softmax appears
    again in the gradient) but not the drop-path draw (made outside the recomputed part:
    two draws in each block of non-zero rate), so the gradients are those without remat."""
    assert op_count(steps[False], "Softmax") == SPEC.depth
    assert op_count(steps[True], "Softmax") == 2 * SPEC.depth
    draws = 2 * (SPEC.depth - 1)  # the first block's rate is 0
    assert op_count(steps[False], "StatelessRandomUniformV2") == draws
    assert op_count(steps[True], "StatelessRandomUniformV2") == draws
    loss, gradients = steps[False](CLIPS)
    remat_loss, remat_gradients = steps[True](CLIPS)
    np.testing.assert_allclose(remat_loss, loss, rtol=1e-6)
    for plain, recomputed in zip(gradients, remat_gradients, strict=True):
        np.testing.assert_allclose(recomputed, plain, rtol=1e-4, atol=1e-5)


def test_stochastic_depth_drops_branches_in_training_only():
    model = network(remat=False)
    inference = [np.asarray(model(CLIPS)) for _ in range(2)]
    trained = [np.asarray(model(CLIPS, training=True)) for _ in range(3)]
    np.testing.assert_array_equal(inference[0], inference[1])
    assert min(np.abs(t - inference[0]).max() for t in trained) > 1e-3
