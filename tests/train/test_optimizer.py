"""Coupled L2, learning-rate multipliers and clipping as the TSN / TSM sources apply them
(actrec.train.loop.optimizer, actrec.train.loop.param_groups), checked against hand-computed updates
and on real segment models."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from actrec.config.recipe import TrainConfig
from actrec.config.validate import validate_train_section
from actrec.errors import ConfigError

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from actrec.cluster.strategy import build_strategy  # noqa: E402
from actrec.train.loop.optimizer import build_optimizer  # noqa: E402
from actrec.train.loop.param_groups import parameter_groups  # noqa: E402
from actrec.train.loop.trainer import DistributedTrainer  # noqa: E402

SHAPE = (6, 6, 2)
CLASSES = 3


@pytest.fixture(scope="module")
def strategy():
    return build_strategy("one-device", environ={})


def stem_model():
    """conv (with bias) -> BatchNorm -> flatten -> hidden Dense -> Dense "classifier"."""
    return keras.Sequential(
        [
            keras.Input(SHAPE),
            keras.layers.Conv2D(4, 3, name="stem"),
            keras.layers.BatchNormalization(name="stem_bn"),
            keras.layers.Flatten(),
            keras.layers.Dense(5, activation="tanh", name="hidden"),
            keras.layers.Dense(CLASSES, name="classifier"),
        ]
    )


def short(variable) -> str:
    """LAYER/WEIGHT of a variable path (without the enclosing models' names)."""
    return "/".join(variable.path.split("/")[-2:])


def short_paths(group) -> tuple[str, ...]:
    return tuple(short(variable) for variable in group.variables)


def batch(seed: int = 0, size: int = 8):
    rng = np.random.default_rng(seed)
    clips = rng.normal(size=(size, *SHAPE)).astype("float32")
    labels = rng.integers(0, CLASSES, size=size).astype("int32")
    return clips, labels


def loss_gradients(model, clips, labels) -> list[np.ndarray]:
    """The gradient of the mean cross-entropy (what the loop's loss is) at the model's weights."""
    with tf.GradientTape() as tape:
        logits = model(clips, training=True)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        )
    return [np.array(g) for g in tape.gradient(loss, model.trainable_variables)]


# (lr_mult, decay_mult) of each trainable variable of stem_model, by the sources' rules with
# bias 2, first conv 5, classifier 3: first conv kernel 5 / 1, its bias 5 x 2 / 0, BN 1 / 0,
# hidden kernel 1 / 1, hidden bias 2 / 0, classifier kernel 3 / 1, classifier bias 3 x 2 / 0.
EXPECTED = {
    "stem/kernel": (5.0, 1.0),
    "stem/bias": (10.0, 0.0),
    "stem_bn/gamma": (1.0, 0.0),
    "stem_bn/beta": (1.0, 0.0),
    "hidden/kernel": (1.0, 1.0),
    "hidden/bias": (2.0, 0.0),
    "classifier/kernel": (3.0, 1.0),
    "classifier/bias": (6.0, 0.0),
}
NO_DECAY_OR_CLIP = TrainConfig(weight_decay=0.0, clip_norm=None)
RULES = replace(NO_DECAY_OR_CLIP, bias_lr_mult=2.0, first_conv_lr_mult=5.0, classifier_lr_mult=3.0)


def test_two_sgd_momentum_steps_with_coupled_l2_equal_the_hand_computed_caffe_update(strategy):
    """Caffe SGDSolver (and PyTorch SGD at a constant rate): clip the loss gradient's global
    norm, add wd * decay_mult * w, history = momentum * history + lr * lr_mult * g, w -= history."""
    rate, momentum, decay, clip = 0.1, 0.9, 0.05, 0.5
    settings = replace(RULES, momentum=momentum, weight_decay=decay, clip_norm=clip)
    trainer = DistributedTrainer(strategy, stem_model, settings, seed=5)
    variables = trainer.model.trainable_variables
    assert {short(v): EXPECTED[short(v)] for v in variables} == EXPECTED
    weights = [np.array(v.value, np.float64) for v in variables]
    history = [np.zeros_like(w) for w in weights]
    clipped_once = False
    for step in range(2):
        clips, labels = batch(step)
        gradients = loss_gradients(trainer.model, clips, labels)
        norm = np.sqrt(sum(np.sum(g.astype(np.float64) ** 2) for g in gradients))
        clipped_once |= norm > clip
        scale = min(1.0, clip / norm)
        for index, variable in enumerate(variables):
            lr_mult, decay_mult = EXPECTED[short(variable)]
            gradient = gradients[index] * scale + decay * decay_mult * weights[index]
            history[index] = momentum * history[index] + rate * lr_mult * gradient
            weights[index] = weights[index] - history[index]
        dataset = tf.data.Dataset.from_tensors((clips, labels))
        trainer.train_step(next(iter(trainer.distribute(lambda context, d=dataset: d))), rate)
    assert clipped_once  # the clip was active: its order relative to the decay matters
    for variable, expected in zip(variables, weights, strict=True):
        np.testing.assert_allclose(np.array(variable.value), expected, rtol=2e-5, atol=1e-6)


def test_decay_before_clipping_would_give_another_update(strategy):
    """The same step with the decay clipped too (the wrong order) is measurably different,
    so the test above pins the order."""
    clips, labels = batch(0)
    settings = replace(NO_DECAY_OR_CLIP, momentum=0.0, weight_decay=0.5, clip_norm=0.2)
    trainer = DistributedTrainer(strategy, stem_model, settings, seed=5)
    variables = trainer.model.trainable_variables
    start = [np.array(v.value, np.float64) for v in variables]
    gradients = loss_gradients(trainer.model, clips, labels)
    decays = [0.5 * float(len(v.shape) > 1) for v in variables]
    wrong = [g + d * w for g, d, w in zip(gradients, decays, start, strict=True)]
    wrong_norm = np.sqrt(sum(np.sum(g**2) for g in wrong))
    wrong_update = [-g * min(1.0, 0.2 / wrong_norm) for g in wrong]
    dataset = tf.data.Dataset.from_tensors((clips, labels))
    trainer.train_step(next(iter(trainer.distribute(lambda context: dataset))), 1.0)
    update = [np.array(v.value) - w for v, w in zip(variables, start, strict=True)]
    assert max(np.max(np.abs(u - w)) for u, w in zip(update, wrong_update, strict=True)) > 1e-3


@pytest.mark.parametrize("name", ["sgd", "adam"])
def test_multipliers_scale_the_rate_of_exactly_their_variables(name):
    """One step on gradients of ones, no decay, no momentum: SGD moves each variable by
    -lr * lr_mult; Adam's first step is -lr * lr_mult * sign(g) as well."""
    model = stem_model()
    settings = replace(RULES, optimizer=name, momentum=0.0)
    optimizer = build_optimizer(settings, model)
    optimizer.learning_rate = 0.01
    start = [np.array(v.value) for v in model.trainable_variables]
    optimizer.apply([tf.ones_like(v.value) for v in model.trainable_variables])
    for variable, initial in zip(model.trainable_variables, start, strict=True):
        lr_mult = EXPECTED[short(variable)][0]
        np.testing.assert_allclose(
            np.array(variable.value) - initial, -0.01 * lr_mult, rtol=1e-4, err_msg=variable.path
        )


@pytest.mark.parametrize("weight_decay_mode", ["coupled", "decoupled"])
def test_fused_adam_equals_keras_adam_and_builds_fewer_ops(weight_decay_mode):
    """actrec's Adam runs TensorFlow's fused kernel with each step's scalars built once per
    multiplier (adam_update); three traced steps with multipliers, weight decay and clipping
    give the weights of Keras' own Adam.update_step on the same gradients, and build fewer
    ops. Not bit for bit: the kernel takes 1 - beta_2 in float32 (1 - 0.999f = 0.00100005,
    Keras 0.001), so each step moves a weight by up to 5e-5 of its update more or less:
    every weight is within 1e-4 of its move of Keras' (a wrong multiplier or decay is off
    by the whole move). The conv bias under BatchNorm is left out: BatchNorm subtracts it,
    so its gradient is float noise (1e-7, Adam's epsilon's size) and its step follows the
    rounding."""
    from types import MethodType

    from actrec.train.loop.step import decayed_gradient_and_rate

    def keras_update_step(self, gradient, variable, learning_rate):
        lr_mult, decay = self.actrec_rates.of(self._var_key(variable))
        gradient, learning_rate = decayed_gradient_and_rate(
            gradient, variable, learning_rate, lr_mult, decay
        )
        return keras.optimizers.Adam.update_step(self, gradient, variable, learning_rate)

    settings = replace(
        RULES, optimizer="adam", weight_decay=0.01, weight_decay_mode=weight_decay_mode,
        clip_norm=0.5,
    )  # fmt: skip
    models, ops_built = [], []
    for reference in (False, True):
        keras.utils.set_random_seed(3)
        model = stem_model()
        initial = [np.array(variable.value) for variable in model.trainable_variables]
        optimizer = build_optimizer(settings, model)
        if reference:
            optimizer.update_step = MethodType(keras_update_step, optimizer)

        @tf.function(autograph=False)
        def step(gradients, rate, optimizer=optimizer, model=model):
            optimizer.learning_rate.assign(rate)
            optimizer.apply(gradients, model.trainable_variables)

        for index in range(3):
            gradients = loss_gradients(model, *batch(index))
            step(gradients, tf.constant(0.01 * (index + 1)))
        graph = step.get_concrete_function(gradients, tf.constant(0.01)).graph
        ops_built.append(len(graph.get_operations()))
        models.append(model)
    mine_and_keras = zip(*(m.trainable_variables for m in models), strict=True)
    for (mine, keras_own), start in zip(mine_and_keras, initial, strict=True):
        if short(mine) == "stem/bias":
            continue
        move = np.abs(np.array(keras_own.value) - start).max()
        difference = np.abs(np.array(mine.value) - np.array(keras_own.value)).max()
        assert difference <= 1e-4 * move, (short(mine), difference, move)
    assert ops_built[0] < ops_built[1], ops_built


def test_decoupled_decay_is_keras_weight_decay_on_weights_only():
    model = stem_model()
    settings = replace(
        NO_DECAY_OR_CLIP, momentum=0.0, weight_decay=0.1, weight_decay_mode="decoupled"
    )
    optimizer = build_optimizer(settings, model)
    optimizer.learning_rate = 0.5
    start = [np.array(v.value) for v in model.trainable_variables]
    optimizer.apply([tf.zeros_like(v.value) for v in model.trainable_variables])
    for variable, initial in zip(model.trainable_variables, start, strict=True):
        decayed = EXPECTED[short(variable)][1] * 0.5 * 0.1  # w -= lr * wd * w
        np.testing.assert_allclose(np.array(variable.value), initial * (1 - decayed), rtol=1e-6)


def _segment_groups(backbone, modality, partial_bn, rules):
    from actrec.models.segment_model import build_segment_model

    model = build_segment_model(
        backbone,
        5,
        modality=modality,
        num_segments=2,
        new_length=2 if modality == "flow" else 1,
        input_size=32,
        partial_bn=partial_bn,
        weights=None,
    )
    return model, {group.name: group for group in parameter_groups(model, rules)}


@pytest.mark.slow
def test_flow_resnet50_groups_name_exactly_the_sources_variables():
    """TSN flow (first conv 5 / 10, biases 2) with TSM's fc_lr5 (classifier 5 / 10), partial
    BN: the groups hold exactly the named variables, and every trainable variable once."""
    rules = TrainConfig(bias_lr_mult=2.0, first_conv_lr_mult=5.0, classifier_lr_mult=5.0)
    model, groups = _segment_groups("resnet50", "flow", True, rules)
    assert short_paths(groups["first_conv_weight"]) == ("conv1_conv/kernel",)
    assert short_paths(groups["first_conv_bias"]) == ("conv1_conv/bias",)
    assert short_paths(groups["classifier_weight"]) == ("classifier/kernel",)
    assert short_paths(groups["classifier_bias"]) == ("classifier/bias",)
    assert short_paths(groups["batch_norm"]) == ("conv1_bn/gamma", "conv1_bn/beta")  # partial BN
    normal_bias = short_paths(groups["normal_bias"])
    assert len(normal_bias) == 52 and all(path.endswith("_conv/bias") for path in normal_bias)
    assert {name: (g.lr_mult, g.decay_mult) for name, g in groups.items()} == {
        "first_conv_weight": (5.0, 1.0),
        "first_conv_bias": (10.0, 0.0),
        "normal_weight": (1.0, 1.0),
        "normal_bias": (2.0, 0.0),
        "batch_norm": (1.0, 0.0),
        "classifier_weight": (5.0, 1.0),
        "classifier_bias": (10.0, 0.0),
    }
    grouped = [v.path for group in groups.values() for v in group.variables]
    assert sorted(grouped) == sorted(v.path for v in model.trainable_variables)


def test_mobilenet_v2_first_conv_has_no_bias_and_every_bn_trains_without_partial_bn():
    rules = TrainConfig(bias_lr_mult=2.0, first_conv_lr_mult=5.0)
    _, groups = _segment_groups("mobilenet_v2", "rgb", False, rules)
    assert short_paths(groups["first_conv_weight"]) == ("Conv1/kernel",)
    assert "first_conv_bias" not in groups  # keras' MobileNetV2 convolutions have no bias
    assert "normal_bias" not in groups
    assert short_paths(groups["classifier_bias"]) == ("classifier/bias",)
    assert groups["classifier_bias"].lr_mult == 2.0  # a bias: TSN's fc-action bias lr_mult 2
    assert len(groups["batch_norm"].variables) == 2 * 52


def test_a_multiplier_for_a_missing_layer_is_an_error():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, name="head")])
    with pytest.raises(ConfigError, match=r"classifier_lr_mult=5 but model .* no trainable Dense"):
        parameter_groups(model, TrainConfig(classifier_lr_mult=5.0))
    with pytest.raises(ConfigError, match=r"first_conv_lr_mult=5 but model .* no convolution"):
        parameter_groups(model, TrainConfig(first_conv_lr_mult=5.0))
    with pytest.raises(ConfigError, match="bias_lr_mult=0"):
        validate_train_section(TrainConfig(bias_lr_mult=0))
    with pytest.raises(ConfigError, match="weight_decay_mode='l2'"):
        validate_train_section(TrainConfig(weight_decay_mode="l2"))


def traced_apply(optimizer, variable):
    """A tf.function applying a gradient to `variable` with `optimizer`."""
    return tf.function(lambda gradient: optimizer.apply([gradient], [variable]), autograph=False)


@pytest.mark.parametrize(("momentum", "nesterov"), [(0.0, False), (0.9, False), (0.9, True)])
def test_fused_sgd_equals_keras_sgd_bit_for_bit(momentum, nesterov):
    """sgd_update (ResourceApplyKerasMomentum / ResourceApplyGradientDescent) gives exactly
    the weights of Keras' own SGD.update_step in three traced steps."""
    from types import MethodType

    from actrec.train.loop.optimizer import sgd_update

    weights = []
    for fused in (False, True):
        variable = keras.Variable(np.random.default_rng(0).normal(size=(5,)).astype("float32"))
        optimizer = keras.optimizers.SGD(learning_rate=0.1, momentum=momentum, nesterov=nesterov)
        optimizer.build([variable])
        if fused:
            optimizer.update_step = MethodType(sgd_update, optimizer)

        step = traced_apply(optimizer, variable)
        for index in range(3):
            step(tf.constant(np.random.default_rng(index + 1).normal(size=(5,)), tf.float32))
        weights.append(np.array(variable.value))
    assert not np.array_equal(weights[0], np.random.default_rng(0).normal(size=(5,)))
    np.testing.assert_array_equal(weights[1], weights[0])
