"""Distillation from a flow teacher (MARS: Crasto et al., "MARS: Motion-Augmented RGB
Stream for Action Recognition", CVPR 2019; craston/MARS): the RGB student's loss is its
cross-entropy plus `weight` x the mean squared error between its features and those of a
frozen flow network on the same clip.

MARS matches the one clip feature of two 3D networks (the pooled output of a ResNeXt). A
TSN / TSM is a 2D network applied per segment, so actrec matches the pooled backbone
features averaged over the segments ("clip", the default) or each segment's ("segments"):
actrec's adaptation. The teacher sees the optical flow of the student's own frames, in its
crop box and flip (actrec.data.input.training_clips.teacher_flow_parts), at its own input
size, in inference mode; its weights never change.

Where the widths differ, a learned linear projection maps the student's features to the
teacher's width, on the student's side (on the teacher's side the loss could collapse by
projecting both to zero). It is checkpointed with the run and never exported: the student
is an ordinary RGB model.

Shapes: student clips [b, S, crop, crop, 3], teacher clips [b, S, crop', crop', 2L];
features [b, F] ("clip") or [b, S, F] ("segments").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from actrec.models.backbone_taps import with_backbone_map
from actrec.models.segment_model import (
    POOLED_FEATURES_LAYER,
    SegmentConsensus,
    SplitSegments,
)
from actrec.train.distillation.teacher import teacher_model

if TYPE_CHECKING:
    import keras

PROJECTION_LAYER = "distill_projection"


@dataclass(frozen=True)
class DistillationSettings:
    """What the trainer needs to distil: `teacher_builder()` builds the teacher's
    keras.Model (flow clips -> logits, its trained weights loaded;
    actrec.train.distillation.teacher), weight (train.distill_weight), features
    (train.distill_features), layer (train.distill_layer: the backbone layer whose maps
    "maps" matches)."""

    teacher_builder: Callable[[], keras.Model]
    weight: float
    features: str
    num_segments: int
    layer: str | None = None


class Distillation:
    """The teacher's features, the student's (projected) features and the feature loss.

    Built by the trainer in its strategy scope, after the student:
    trained_model: the student's inputs -> [logits, projected features]; it holds the
        student's layers and the projection, so its trainable variables are what the
        optimizer updates (and K-step averaging averages).
    teacher: flow clips -> features, frozen.
    projection: the keras Dense layer (pooled features: None when the widths are equal;
        maps: always, FitNets' regressor), checkpointed.
    """

    def __init__(self, settings: DistillationSettings, student: keras.Model):
        import keras

        self.weight = float(settings.weight)
        self.features = settings.features
        teacher = settings.teacher_builder()
        teacher.trainable = False
        if self.features == "maps":
            self._match_maps(student, teacher, settings)
            return
        self.teacher = keras.Model(
            teacher.inputs,
            self._pooled(teacher, settings.num_segments),
            name="distillation_teacher",
        )
        self.teacher.trainable = False
        student_features = self._pooled(student, settings.num_segments)
        teacher_width = int(self.teacher.output_shape[-1])
        self.projection = None
        if int(student_features.shape[-1]) != teacher_width:
            self.projection = keras.layers.Dense(
                teacher_width, dtype="float32", name=PROJECTION_LAYER
            )
            student_features = self.projection(student_features)
        self.trained_model = keras.Model(
            student.inputs, [student.outputs[0], student_features], name="distilled_student"
        )

    def _match_maps(self, student: keras.Model, teacher: keras.Model, settings) -> None:
        """FitNets' hints (Romero et al., ICLR 2015): the student's map of the backbone layer
        `settings.layer` [B*S, h, w, c] through a learned 1x1 projection (FitNets'
        regressor; always, even at equal widths) against the teacher's map of the same
        layer, bilinearly resized to the student's grid [B*S, h, w, c'] (the teacher works
        at its own, smaller input size); both as [B, S, h * w * c']."""
        import keras

        # the recipe's validation requires settings.layer with "maps"; the teacher's check
        # that both backbones have it, before any write
        tapped_student = with_backbone_map(student, settings.layer)
        tapped_teacher = with_backbone_map(teacher, settings.layer)
        student_map, teacher_map = tapped_student.outputs[1], tapped_teacher.outputs[1]
        height, width = (int(side) for side in student_map.shape[1:3])
        if tuple(teacher_map.shape[1:3]) != (height, width):
            teacher_map = keras.layers.Resizing(
                height, width, interpolation="bilinear", dtype="float32"
            )(teacher_map)
        self.teacher = keras.Model(
            teacher.inputs,
            SplitSegments(settings.num_segments)(keras.layers.Flatten()(teacher_map)),
            name="distillation_teacher",
        )
        self.teacher.trainable = False
        self.projection = keras.layers.Dense(
            int(teacher_map.shape[-1]), dtype="float32", name=PROJECTION_LAYER
        )
        student_features = SplitSegments(settings.num_segments)(
            keras.layers.Flatten()(self.projection(student_map))
        )
        self.trained_model = keras.Model(
            student.inputs,
            [tapped_student.outputs[0], student_features],
            name="distilled_student",
        )

    def _pooled(self, model: keras.Model, num_segments: int):
        """The pooled backbone features of a segment model (its nested backbone's output,
        [B*S, F]) as [B, S, F] ("segments") or averaged over the segments [B, F] ("clip");
        "logits": its segment-averaged logits [B, K]."""
        if self.features == "logits":
            return model.outputs[0]
        # the backbone's output in this model's graph, [B*S, F] (a nested model's own
        # `.output` is its inner graph's)
        pooled = model.get_layer(POOLED_FEATURES_LAYER).input
        if self.features == "segments":
            return SplitSegments(num_segments)(pooled)  # [B, S, F]
        return SegmentConsensus(num_segments)(pooled)  # [B, F]

    def checkpoint_items(self) -> dict:
        """The projection, for the run's checkpoints (nothing when there is none)."""
        return {} if self.projection is None else {PROJECTION_LAYER: self.projection}

    def logits_and_feature_losses(self, clips, training: bool = True):
        """(logits [b, K] float32, per-example feature loss [b] float32) of a batch
        (student clips, teacher clips): the mean squared difference of each example's
        features, over their elements (torch.nn.MSELoss's mean, per example)."""
        import tensorflow as tf

        student_clips, teacher_clips = clips
        logits, features = self.trained_model(student_clips, training=training)
        targets = tf.stop_gradient(tf.cast(self.teacher(teacher_clips, training=False), tf.float32))
        difference = tf.cast(features, tf.float32) - targets
        axes = list(range(1, len(difference.shape)))
        return tf.cast(logits, tf.float32), tf.reduce_mean(tf.square(difference), axis=axes)


def distillation_settings(teacher, recipe) -> DistillationSettings | None:
    """The trainer's DistillationSettings of a checked
    actrec.train.distillation.teacher.Teacher (None: no distillation)."""
    if teacher is None:
        return None

    num_segments = recipe.data.num_segments
    return DistillationSettings(
        teacher_builder=lambda: teacher_model(teacher, num_segments),
        weight=recipe.train.distill_weight,
        features=recipe.train.distill_features,
        num_segments=num_segments,
        layer=recipe.train.distill_layer,
    )
