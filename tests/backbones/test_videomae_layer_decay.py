"""Layer-wise learning-rate decay and AdamW on a tiny VideoMAE (3 blocks): the multiplier of
every variable, and what one step does with them."""

from __future__ import annotations

import numpy as np
import pytest

from actrec.config.recipe import TrainConfig
from actrec.config.validate import validate_train_section
from actrec.errors import ConfigError

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

from actrec.backbones.videomae.build import videomae_classifier  # noqa: E402
from actrec.backbones.videomae.spec import VideoMAESpec  # noqa: E402
from actrec.train.loop.optimizer import build_optimizer  # noqa: E402
from actrec.train.loop.param_groups import parameter_groups  # noqa: E402

TINY = VideoMAESpec("videomae_tiny_test", width=16, depth=3, heads=2, mlp_width=32)
DECAY = 0.75
ADAMW = TrainConfig(
    optimizer="adamw", weight_decay_mode="decoupled", weight_decay=0.0, clip_norm=None,
    layer_decay=DECAY,
)  # fmt: skip
# d ** (L + 1 - k) with L = 3: the embeddings k = 0, block i k = i + 1, the head k = 4.
SCALE = {"patch_embedding": 0.31640625, "block_0": 0.421875, "block_1": 0.5625,
         "block_2": 0.75, "fc_norm": 1.0, "classifier": 1.0}  # fmt: skip


def tiny_model(seed: int = 0):
    keras.utils.set_random_seed(seed)
    return videomae_classifier(TINY, 5, num_frames=4, image_size=(32, 32))


@pytest.fixture(scope="module")
def model():
    return tiny_model()


def rates_by_path(groups) -> dict[str, tuple[float, float]]:
    return {path: (group.lr_mult, group.decay_mult) for group in groups for path in group.paths}


def test_every_variable_has_its_layers_rate_and_only_weights_decay(model):
    rates = rates_by_path(parameter_groups(model, ADAMW))
    assert sorted(rates) == sorted(variable.path for variable in model.trainable_variables)
    for path, (lr_mult, decay_mult) in rates.items():
        assert lr_mult == SCALE[path.split("/")[0]], path
        assert decay_mult == (1.0 if path.endswith("kernel") else 0.0), path  # no bias, norm
    assert rates["patch_embedding/kernel"] == (DECAY**4, 1.0)
    assert rates["block_0/attention/query/bias"] == (DECAY**3, 0.0)
    assert rates["block_2/norm_after/gamma"] == (DECAY, 0.0)
    assert rates["classifier/kernel"] == (1.0, 1.0)
    names = [group.name for group in parameter_groups(model, ADAMW)]
    assert names[:3] == ["layer_0_first_conv_weight", "layer_0_first_conv_bias",
                         "layer_1_normal_weight"]  # fmt: skip
    assert {group.layer for group in parameter_groups(model, ADAMW)} == {0, 1, 2, 3, 4}


def test_layer_decay_1_keeps_the_rule_groups(model):
    groups = parameter_groups(model, TrainConfig())
    assert {group.lr_mult for group in groups} == {1.0}
    assert all(group.layer is None for group in groups)


def test_one_adamw_step_moves_each_layer_by_its_share_of_the_rate():
    """Adam's first step moves a weight by lr x its multiplier (m / sqrt(v) = sign(g)): the
    largest move of every variable is lr x d ** (L + 1 - k), so block 0 moves 0.421875 of
    the head's."""
    model = tiny_model(1)
    clips = np.random.default_rng(0).normal(size=(2, 4, 32, 32, 3)).astype("float32")
    labels = np.array([1, 3])
    with tf.GradientTape() as tape:
        logits = model(clips, training=True)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer = build_optimizer(ADAMW, model)
    optimizer.learning_rate = 0.01
    start = [np.array(variable.value) for variable in model.trainable_variables]
    optimizer.apply(gradients, model.trainable_variables)
    moves = {
        variable.path: np.abs(np.array(variable.value) - initial).max() / 0.01
        for variable, initial in zip(model.trainable_variables, start, strict=True)
    }
    for path, move in moves.items():
        np.testing.assert_allclose(move, SCALE[path.split("/")[0]], rtol=2e-3, err_msg=path)
    ratio = moves["block_0/mlp_in/kernel"] / moves["classifier/kernel"]
    assert ratio == pytest.approx(DECAY**3, rel=2e-3)


def test_adamw_decays_each_weight_at_its_own_rate_and_not_biases_or_norms(model):
    """PyTorch's AdamW: w <- w (1 - lr x lr_mult x weight_decay); zero gradients leave the
    moments' step at 0, so the decay alone is seen, exactly."""
    settings = TrainConfig(
        optimizer="adamw", weight_decay_mode="decoupled", weight_decay=0.05,
        clip_norm=None, layer_decay=DECAY,
    )  # fmt: skip
    trained = tiny_model(2)
    optimizer = build_optimizer(settings, trained)
    optimizer.learning_rate = 0.5
    start = [np.array(variable.value) for variable in trained.trainable_variables]
    optimizer.apply([tf.zeros_like(v.value) for v in trained.trainable_variables])
    for variable, initial in zip(trained.trainable_variables, start, strict=True):
        weight = variable.path.endswith("kernel")
        kept = 1 - 0.5 * SCALE[variable.path.split("/")[0]] * 0.05 if weight else 1.0
        np.testing.assert_allclose(
            np.array(variable.value), initial * kept, rtol=1e-6, err_msg=variable.path
        )


def test_layer_decay_without_blocks_and_adamw_with_coupled_decay_are_refused():
    plain = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, name="classifier")])
    with pytest.raises(ConfigError, match=r"layer_decay needs a transformer .* use train\.layer"):
        parameter_groups(plain, TrainConfig(layer_decay=0.75))
    with pytest.raises(ConfigError, match=r"train.layer_decay=1.5 is not valid; use a decay"):
        validate_train_section(TrainConfig(layer_decay=1.5))
    with pytest.raises(ConfigError, match="weight_decay_mode='coupled' is not valid; optimizer"):
        validate_train_section(TrainConfig(optimizer="adamw"))
