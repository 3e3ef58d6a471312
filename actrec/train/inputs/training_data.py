"""The prepared data a run trains on, checked before training starts.

Shard sizes are checked at start (a damaged shard is named before training); validation
never reads the test split (actrec.train.inputs.validation).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from actrec.data.format.integrity import check_shard_sizes
from actrec.data.format.manifest import read_manifest
from actrec.data.input.clip_spec import check_clip_spec, clip_spec, dataset_info
from actrec.errors import ConfigError
from actrec.runs.record import RunRecord
from actrec.train.distillation.teacher import teacher_clip_spec, teacher_of
from actrec.train.inputs.class_balance import training_class_counts
from actrec.train.inputs.validation import validation_plan

if TYPE_CHECKING:
    from actrec.data.input.clip_spec import ClipSpec, DatasetInfo
    from actrec.train.distillation.teacher import Teacher
    from actrec.train.inputs.validation import ValidationPlan


@dataclass(frozen=True)
class TrainingData:
    """What `train` reads from the prepared folder.

    info: the prepared folder's classes and videos per split
        (actrec.data.input.clip_spec.dataset_info).
    train_spec / eval_spec: the clip specs of training and validation.
    train_videos: training videos, less the validation hold-out.
    validation: actrec.train.inputs.validation.ValidationPlan.
    splits_read: the splits training reads (named when a shard turns out damaged).
    teacher: a distilled run's flow teacher (actrec.train.distillation.teacher.Teacher), else None;
    teacher_spec: the teacher's clip spec beside train_spec, else None.
    class_counts: training clips per class [classes], less the hold-out
        (actrec.train.inputs.class_balance).
    """

    info: DatasetInfo
    train_spec: ClipSpec
    eval_spec: ClipSpec
    train_videos: int
    validation: ValidationPlan
    splits_read: list[str]
    teacher: Teacher | None = None
    teacher_spec: ClipSpec | None = None
    class_counts: tuple[int, ...] = ()


def check_training_data(recipe, prepared_dir: Path) -> TrainingData:
    """`prepared_dir` checked against `recipe`; ConfigError / DatasetError when it cannot
    be trained on."""
    info = dataset_info(prepared_dir)
    train_spec, eval_spec = clip_spec(recipe, training=True), clip_spec(recipe, training=False)
    check_clip_spec(info, train_spec)
    train_videos = info.num_videos.get(recipe.data.train_split, 0)
    if not train_videos:
        raise ConfigError(
            f"{prepared_dir} has no videos in the {recipe.data.train_split!r} split; it has "
            f"{', '.join(f'{k} ({v})' for k, v in info.num_videos.items())}"
        )
    validation = validation_plan(recipe, read_manifest(prepared_dir))
    train_videos -= len(validation.held_out)
    splits_read = sorted({recipe.data.train_split, validation.split} - {None})
    check_shard_sizes(prepared_dir, splits_read)  # a damaged shard is named before training
    counts = training_class_counts(
        prepared_dir, recipe.data.train_split, info.num_classes, validation.held_out
    )
    return TrainingData(
        info, train_spec, eval_spec, train_videos, validation, splits_read, class_counts=counts
    )


def with_teacher(data: TrainingData, recipe, previous: RunRecord) -> TrainingData:
    """`data` with the recipe's checked flow teacher (train.distill_from) and its clip spec
    (actrec.train.distillation.teacher); unchanged without distillation. `previous`: the
    resumed run's run.json (an empty RunRecord for a new run)."""
    from dataclasses import replace

    teacher = teacher_of(recipe, data.info, previous)
    if teacher is None:
        return data
    return replace(data, teacher=teacher, teacher_spec=teacher_clip_spec(data.train_spec, teacher))
