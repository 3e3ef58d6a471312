"""FitNets' hints (train.distill_features=maps): the student's map of one backbone layer,
through a learned 1x1 projection, against the teacher's map of the same layer resized to
the student's grid. The tapped model is the segment model itself (same logits, shared
weights); the loss is that MSE; a layer the backbones lack is refused before anything is
written."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_recipe import TINY_RUN_SETTINGS

from actrec.config.files import load_recipe
from actrec.config.overrides import apply_overrides
from actrec.errors import ConfigError
from actrec.models.backbone_taps import with_backbone_map
from actrec.models.segment_model import build_segment_model
from actrec.train.run import train

tf = pytest.importorskip("tensorflow")

LAYER = "block_2_add"  # the test network's first shifted block: 8x8 maps at 32 px


def _tiny(modality: str, size: int, architecture: str):
    return build_segment_model(
        "test_mobilenet_v2",
        3,
        architecture=architecture,
        modality=modality,
        num_segments=2,
        new_length=2 if modality == "flow" else None,
        input_size=size,
        weights="none",
        shift_fraction=0.25,
    )


def test_the_tapped_model_is_the_model_and_its_map_is_the_shifted_networks():
    """The tapped model gives the model's logits with the same variables, and its map is
    the layer's output in the shifted network (a TSM's layer: segment 0's map sees segment
    1's frame; the keras.applications graph the layer was first built in would not)."""
    model = _tiny("rgb", 32, "tsm")
    tapped = with_backbone_map(model, LAYER)
    clips = np.random.default_rng(0).uniform(0, 255, (3, 2, 32, 32, 3)).astype("float32")
    logits, feature_map = tapped(clips)
    np.testing.assert_allclose(np.array(logits), np.array(model(clips)), atol=1e-6)
    assert tuple(feature_map.shape[:3]) == (6, 8, 8)  # [B*S, h, w, c]
    ids = {id(variable) for variable in model.trainable_variables}
    assert {id(variable) for variable in tapped.trainable_variables} == ids
    changed = clips.copy()
    changed[:, 1] = 255 - changed[:, 1]  # segment 1 only
    changed_map = np.array(tapped(changed)[1]).reshape(3, 2, 8, 8, -1)
    before = np.array(feature_map).reshape(3, 2, 8, 8, -1)
    assert np.abs(changed_map[:, 0] - before[:, 0]).max() > 1e-3  # the shift carried it


def test_a_layer_the_backbone_lacks_is_named_with_the_layers_it_has():
    with pytest.raises(ConfigError, match=r"'block_5_add' is not a feature-map layer.*block_2_add"):
        with_backbone_map(_tiny("rgb", 32, "tsm"), "block_5_add")


def test_the_feature_loss_is_the_projected_maps_against_the_teachers_resized():
    """A teacher at 16 px (4x4 maps) and a student at 32 px (8x8): the feature MSE of a
    step is that of the student's projected map against the teacher's map resized
    bilinearly to 8x8, and the step trains the projection, never the teacher."""
    import keras

    from actrec.config.recipe import TrainConfig
    from actrec.train.distillation.loss import DistillationSettings
    from actrec.train.loop.trainer import DistributedTrainer

    teacher = _tiny("flow", 16, "tsn")
    trainer = DistributedTrainer(
        tf.distribute.get_strategy(),
        lambda: _tiny("rgb", 32, "tsm"),
        TrainConfig(optimizer="sgd", momentum=0.0, weight_decay=0.0, clip_norm=None),
        distillation=DistillationSettings(lambda: teacher, 2.0, "maps", 2, layer=LAYER),
    )
    rng = np.random.default_rng(1)
    student_clips = tf.constant(rng.uniform(0, 255, (4, 2, 32, 32, 3)), tf.float32)
    teacher_clips = tf.constant(rng.uniform(0, 255, (4, 2, 16, 16, 4)), tf.float32)
    labels = tf.constant([0, 1, 2, 0])
    projection = trainer.distillation.projection
    # BatchNorm in training mode, as in the step: the batch's own statistics
    student_map = with_backbone_map(trainer.model, LAYER)(student_clips, training=True)[1]
    teacher_map = np.array(with_backbone_map(teacher, LAYER)(teacher_clips)[1])
    assert teacher_map.shape[1:3] == (4, 4) and student_map.shape[1:3] == (8, 8)
    resized = np.array(keras.ops.image.resize(teacher_map, (8, 8), interpolation="bilinear"))
    projected = np.array(projection(np.array(student_map)))
    expected = ((projected - resized) ** 2).reshape(4, -1).mean(axis=1).mean()
    kernel_before = np.array(projection.kernel)
    teacher_before = [np.array(variable) for variable in teacher.variables]
    values = trainer.train_step(((student_clips, teacher_clips), labels), 0.1)
    assert values["feature_mse"] == pytest.approx(expected, rel=1e-4)
    assert values["loss"] == pytest.approx(values["cross_entropy"] + 2.0 * values["feature_mse"])
    assert not np.allclose(np.array(projection.kernel), kernel_before)
    for before, variable in zip(teacher_before, teacher.variables, strict=True):
        np.testing.assert_array_equal(before, np.array(variable))


def test_maps_without_a_layer_or_with_one_the_backbones_lack_are_refused(tiny_runs, tmp_path):
    def student(*settings):
        return apply_overrides(
            load_recipe("synthetic-tsm"),
            [*TINY_RUN_SETTINGS, f"train.distill_from={tiny_runs['flow']}", *settings],
        )

    for settings, match in (
        (["train.distill_features=maps"], r"name it with train\.distill_layer"),
        (
            ["train.distill_features=maps", "train.distill_layer=block_5_add"],
            r"'block_5_add' is not a feature-map layer of the student's test_mobilenet_v2 "
            r"backbone; name a layer both backbones have, e\.g\. .*block_2_add",
        ),
        (
            ["train.distill_layer=block_2_add"],  # with the pooled features: a mistake
            r"names the layer whose maps train\.distill_features=maps matches, and "
            r"distill_features is 'clip'",
        ),
    ):
        run = tmp_path / "run"
        with pytest.raises(ConfigError, match=match):
            train(student(*settings), tiny_runs["prepared"], run)
        assert not run.exists()  # refused before anything is written
