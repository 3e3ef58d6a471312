"""TSN / TSM segment models: weights, outputs, temporal mixing, partial BN, serialisation."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from actrec.backbones.build import build_plain_backbone
from actrec.backbones.registry import backbone_spec
from actrec.errors import ConfigError
from actrec.models.keras_file import load_segment_model
from actrec.models.segment_model import (
    batch_normalization_layers,
    build_segment_model,
    copy_model_weights,
    segment_backbone,
)

SIZE = 32


def clip_batch(batch=2, segments=4, channels=3, seed=0):
    """Random frames in [0, 255]: [B, T, H, W, C]."""
    rng = np.random.default_rng(seed)
    return rng.uniform(0, 255, (batch, segments, SIZE, SIZE, channels)).astype("float32")


def tiny(backbone="test_mobilenet_v2", **options):
    options.setdefault("num_classes", 5)
    options.setdefault("num_segments", 4)
    options.setdefault("weights", None)
    return build_segment_model(backbone, input_size=SIZE, **options)


def predict(model, frames):
    return keras.ops.convert_to_numpy(model(frames, training=False))


def per_frame_features(model, frames):
    """The backbone's output for every frame, [B, T, F]."""
    backbone = segment_backbone(model)
    preprocessing = model.get_layer("preprocessing")
    merged = keras.ops.reshape(preprocessing(frames), (-1, *frames.shape[2:]))  # [B*T, H, W, C]
    features = keras.ops.convert_to_numpy(backbone(merged, training=False))  # [B*T, F]
    return features.reshape(frames.shape[0], frames.shape[1], -1)  # [B, T, F]


@pytest.fixture(scope="module")
def resnet_pair():
    tsn = build_segment_model("resnet50", 101, num_segments=4, input_size=SIZE, weights=None)
    tsm = build_segment_model(
        "resnet50", 101, architecture="tsm", num_segments=4, input_size=SIZE, weights=None
    )
    tsm.set_weights(tsn.get_weights())
    return tsn, tsm


def test_tsm_and_tsn_have_identical_weight_lists(resnet_pair):
    tsn, tsm = resnet_pair
    assert [(w.path, tuple(w.shape)) for w in tsn.weights] == [
        (w.path, tuple(w.shape)) for w in tsm.weights
    ]
    no_top = build_plain_backbone(backbone_spec("resnet50"), (SIZE, SIZE, 3))
    assert len(tsn.weights) == len(no_top.weights) + 2  # + classifier kernel and bias


def test_parameter_count_is_the_backbone_plus_the_classifier(resnet_pair):
    tsn, tsm = resnet_pair
    no_top = build_plain_backbone(backbone_spec("resnet50"), (SIZE, SIZE, 3)).count_params()
    assert no_top == 23_587_712
    assert tsn.count_params() == no_top + 2048 * 101 + 101
    assert tsm.count_params() == tsn.count_params()


def test_tsm_outputs_depend_on_neighbouring_frames_and_tsn_outputs_do_not(resnet_pair):
    tsn, tsm = resnet_pair
    frames = clip_batch(batch=1, segments=4)
    perturbed = frames.copy()
    perturbed[:, 1] = np.random.default_rng(9).uniform(0, 255, perturbed[:, 1].shape)
    for model, neighbours_change in ((tsm, True), (tsn, False)):
        before = per_frame_features(model, frames)
        after = per_frame_features(model, perturbed)
        change = np.abs(after - before).max(axis=-1)[0]  # [T]
        assert change[1] > 1e-3
        for neighbour in (0, 2):
            if neighbours_change:
                assert change[neighbour] > 1e-3, (model.name, change)
            else:
                assert change[neighbour] == 0.0, (model.name, change)
        if not neighbours_change:
            assert change[3] == 0.0


def test_tsm_with_fold_fraction_zero_reproduces_tsn(resnet_pair):
    tsn, _ = resnet_pair
    unshifted = build_segment_model(
        "resnet50",
        101,
        architecture="tsm",
        num_segments=4,
        input_size=SIZE,
        weights=None,
        shift_fraction=0.0,
        partial_bn=True,
    )
    unshifted.set_weights(tsn.get_weights())
    frames = clip_batch()
    np.testing.assert_array_equal(predict(unshifted, frames), predict(tsn, frames))
    # and the default shift does change them:
    _, tsm = resnet_pair
    assert np.abs(predict(tsm, frames) - predict(tsn, frames)).max() > 1e-4


def test_consensus_is_the_average_of_segment_logits(resnet_pair):
    model, _ = resnet_pair
    frames = clip_batch(batch=2, segments=4)
    features = per_frame_features(model, frames)  # [B, T, F]
    assert features.std(axis=1).max() > 1e-3  # the segments differ
    classifier = model.get_layer("classifier")
    kernel, bias = (keras.ops.convert_to_numpy(w) for w in classifier.weights)
    expected = (features @ kernel + bias).mean(axis=1)  # [B, K]
    np.testing.assert_allclose(predict(model, frames), expected, rtol=1e-4, atol=1e-5)


def test_weights_copy_into_a_model_with_another_segment_count():
    model = tiny(backbone="efficientnet_b0", num_segments=2)
    normalization = next(
        layer
        for layer in segment_backbone(model).layers
        if isinstance(layer, keras.layers.Normalization)
    )
    normalization.adapt_mean.assign([100.0, 50.0, 25.0])
    normalization.finalize_state()
    longer = tiny(backbone="efficientnet_b0", num_segments=3)
    copy_model_weights(model, longer)
    frames = clip_batch(batch=1, segments=3)
    expected = per_frame_features(model, frames[:, :2])
    # A batch of 3 frames against one of 2: the kernels may sum in another order (8e-6
    # measured on features of about 1; a wrong copy differs by the features themselves).
    np.testing.assert_allclose(
        per_frame_features(longer, frames)[:, :2], expected, rtol=1e-4, atol=1e-5
    )
    with pytest.raises(ConfigError, match="weight"):
        copy_model_weights(model, tiny(num_segments=2))


def test_flow_model_takes_two_l_channels():
    model = tiny(modality="flow", new_length=3, num_segments=2)
    assert model.input_shape == (None, 2, SIZE, SIZE, 6)
    assert model.output_shape == (None, 5)
    assert predict(model, clip_batch(segments=2, channels=6)).shape == (2, 5)


def bn_statistics(model):
    return {
        layer.name: [
            keras.ops.convert_to_numpy(v).copy() for v in (layer.moving_mean, layer.moving_variance)
        ]
        for layer in batch_normalization_layers(segment_backbone(model))
    }


def test_partial_bn_updates_only_the_first_batch_norm():
    model = tiny(architecture="tsn")  # partial BN on by default for TSN
    layers = batch_normalization_layers(segment_backbone(model))
    assert [layer.trainable for layer in layers] == [True] + [False] * (len(layers) - 1)
    before = bn_statistics(model)
    model.compile(
        optimizer=keras.optimizers.SGD(0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    model.train_on_batch(clip_batch(), np.array([1, 3]))
    after = bn_statistics(model)
    changed = [
        name
        for name in before
        if any(not np.array_equal(b, a) for b, a in zip(before[name], after[name], strict=True))
    ]
    assert changed == [layers[0].name] == ["bn_Conv1"]


def test_without_partial_bn_every_batch_norm_updates():
    model = tiny(architecture="tsm")  # TSM trains every BatchNorm by default
    before = bn_statistics(model)
    model.compile(
        optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    model.train_on_batch(clip_batch(), np.array([1, 3]))
    after = bn_statistics(model)
    unchanged = [name for name in before if np.array_equal(before[name][0], after[name][0])]
    assert unchanged == []


def test_options_are_validated():
    with pytest.raises(ConfigError, match="new_length"):
        tiny(new_length=2)
    with pytest.raises(ConfigError, match="'video'"):
        tiny(modality="video")
    with pytest.raises(ConfigError, match="densenet121"):
        tiny(backbone="densenet121", architecture="tsm")


@pytest.mark.slow
def test_saved_models_reload_with_identical_outputs(tmp_path, resnet_pair):
    _, tsm = resnet_pair
    flow = tiny(
        architecture="tsm",
        modality="flow",
        new_length=2,
        shift_placement="block",
        shift_direction="online",
        num_segments=4,
    )
    for model, channels in ((tsm, 3), (flow, 4)):
        frames = clip_batch(segments=4, channels=channels)
        path = tmp_path / f"{model.name}.keras"
        model.save(path)
        reloaded = load_segment_model(path)
        np.testing.assert_array_equal(predict(reloaded, frames), predict(model, frames))
        assert [w.path for w in reloaded.weights] == [w.path for w in model.weights]
        flags = [layer.trainable for layer in batch_normalization_layers(reloaded)]
        assert flags == [layer.trainable for layer in batch_normalization_layers(model)]


def test_every_model_option_of_the_recipe_is_a_constructor_argument():
    """The recipe's model section is passed whole (actrec.models.factory): a new option is a
    ModelConfig field and an argument of build_segment_model, with nothing in between."""
    import dataclasses
    import inspect

    from actrec.config.recipe import DataConfig, ModelConfig
    from actrec.models.factory import build_model

    parameters = inspect.signature(build_segment_model).parameters
    assert {item.name for item in dataclasses.fields(ModelConfig)} <= set(parameters)
    model = ModelConfig(
        architecture="tsm", backbone="mobilenet_v2", weights="none", batch_norm_momentum=0.7
    )
    network = build_model(model, DataConfig(num_segments=4, crop_size=SIZE), num_classes=3)
    assert network.input_shape == (None, 4, SIZE, SIZE, 3) and network.output_shape == (None, 3)
    assert {layer.momentum for layer in batch_normalization_layers(network)} == {0.7}
    assert any("shift" in layer.name for layer in segment_backbone(network).layers)
