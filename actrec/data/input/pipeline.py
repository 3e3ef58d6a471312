"""tf.data input pipelines over prepared shards: train and evaluation
(docs/architecture.md §2, §5).

    example k -> (video, randomness) (actrec.data.input.order) -> the video's header (one read)
      -> sample frame indices -> read only those frame records -> decode (training: only
      the crop box) -> flip / resize / scale -> batch -> prefetch
      (training clips: actrec.data.input.training_clips; the evaluation clip:
      actrec.data.input.clips)

`build_dataset` yields `(clips, labels)`: clips float32 [B, T, crop, crop, C] with
T = num_segments and C = 3 (RGB) or 2 * new_length (flow, interleaved [x0, y0, x1, y1, ...]);
labels int32 [B] (-1 for unlabelled splits).

Training: a new permutation of the videos every epoch, TSN segment sampling with a random
offset per segment (or TSM dense clips from a random start), multi-scale / corner crop,
random flip (flow-aware). Evaluation: the split's order, segment centres (or a centred
dense clip), short side resized to scale_size, centre crop, no flip.

Position: example k of a pipeline is a function of (seed, epoch, position in the epoch)
alone (actrec.data.input.order), so `start_example=k` starts a pipeline where another one was
after k examples without reading or decoding those k: this is how a training run resumes.
With `seed` the data are deterministic (two builds yield identical batches; map order is
kept); without, training draws a seed at build time and lets parallel calls reorder.

finish_on_device: training stops at the decoded uint8 crops (the part of the work that is
JPEG decoding) and yields ((parts, geometry), labels); `batch_finisher`
(training_clips.finish_batch) turns them into the clips above where the model runs (an
accelerator), with the same ops as this pipeline uses.
"""

from __future__ import annotations

import random
from collections.abc import Collection
from pathlib import Path

from actrec.data.format import records
from actrec.data.format.manifest import read_manifest, split_videos
from actrec.data.input import balanced_order, clip_reading, clips, holdout, order, training_clips
from actrec.data.input.clip_spec import (
    ClipSpec,
    check_clip_spec,
    dataset_info,
)
from actrec.errors import ConfigError, DatasetError

__all__ = ["batch_finisher", "build_dataset"]


def batch_finisher(spec: ClipSpec, teacher_spec: ClipSpec | None = None):
    """The clips float32 [B, T, crop, crop, C] of a finish_on_device batch ((parts, geometry)
    of `build_dataset`) as a function of its inputs (training_clips.finish_batch); run it
    where the model runs. With a distillation teacher_spec: (clips, the teacher's flow
    clips)."""
    return lambda inputs: training_clips.finish_batch(inputs[0], inputs[1], spec, teacher_spec)


def _pipeline_count(input_context) -> tuple[int, int]:
    """(num_input_pipelines, input_pipeline_id), (1, 0) without an input context."""
    if input_context is None:
        return 1, 0
    count, index = int(input_context.num_input_pipelines), int(input_context.input_pipeline_id)
    if count < 1 or not 0 <= index < count:
        raise ConfigError(
            f"input context with num_input_pipelines={count}, input_pipeline_id={index} is not "
            "valid; pass the tf.distribute.InputContext the strategy gives dataset_fn"
        )
    return count, index


def _example_function(videos: list[dict], spec: ClipSpec, training: bool, outputs: dict):
    """(video index, int64 random) -> (clip, label[, video_id]); see build_dataset."""
    import tensorflow as tf

    paths = tf.constant([str(video["shard_path"]) for video in videos])
    offsets = tf.constant([video["offset"] for video in videos], tf.int64)
    labels = tf.constant([video["label"] for video in videos], tf.int32)
    counter = outputs["decode_counter"]
    teacher_spec = outputs["teacher_spec"]

    def example(video, random_value):
        path = tf.gather(paths, video)
        header = records.read_header(path, tf.gather(offsets, video))
        if training:
            seed = tf.stack([random_value, tf.constant(0, tf.int64)])  # [2] stateless seed
            parts, geometry = training_clips.training_crops(path, header, spec, seed, teacher_spec)
            if outputs["finish_on_device"]:
                clip = (tuple(parts), geometry)
            else:
                clip = training_clips.finish_example(parts, geometry, spec)
        else:
            num_frames = (
                header["num_frames"] - 1 if spec.modality == "flow" else header["num_frames"]
            )
            starts = clip_reading.clip_starts(num_frames, spec, False, None)  # segment centres
            clip = clips.evaluation_clip(path, header, starts, spec)
        if not isinstance(clip, tuple):
            shape = [spec.num_segments, spec.crop_size, spec.crop_size, spec.channels]
            clip = tf.ensure_shape(clip, shape)
        dependencies = [] if counter is None else [counter.assign_add(1)]
        with tf.control_dependencies(dependencies):
            label = tf.gather(labels, video)
        if outputs["with_video_ids"]:
            return clip, label, header["video_id"]
        return clip, label

    return tf.autograph.experimental.do_not_convert(example)


def _padded_parts(spec: ClipSpec, side: int) -> tuple:
    """padded_batch shapes of one clip's decoded parts (a frame's RGB window, or a flow
    field's crop), each padded to side x side (RGB: plus the chroma margins)."""
    if spec.modality == "flow":
        return tuple([side, side] for _ in range(2 * spec.num_segments * spec.new_length))
    side += 2 * training_clips.CHROMA_MARGIN
    return tuple([side, side, 3] for _ in range(spec.num_segments))


def _padded_shapes(spec: ClipSpec, side: int, with_video_ids: bool, teacher_spec=None):
    """padded_batch shapes of finish_on_device elements (a distillation teacher's flow
    parts after the clip's own)."""
    parts = _padded_parts(spec, side)
    if teacher_spec is not None:
        parts += _padded_parts(teacher_spec, side)
    shapes = ((parts, [5]), [])
    return (*shapes, []) if with_video_ids else shapes


def _checked_arguments(batch_size, start_example, finish_on_device, training, teacher_spec):
    if teacher_spec is not None and not finish_on_device:
        raise ConfigError("teacher_spec (distillation) needs finish_on_device training batches")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"batch_size={batch_size!r} is not valid; use a whole number >= 1")
    if isinstance(start_example, bool) or not isinstance(start_example, int) or start_example < 0:
        raise ConfigError(f"start_example={start_example!r} is not valid; use a whole number >= 0")
    if finish_on_device and not training:
        raise ConfigError("finish_on_device applies to training; evaluation yields finished clips")


def build_dataset(
    prepared_dir: Path | str,
    split: str,
    spec: ClipSpec,
    batch_size: int,
    training: bool,
    seed: int | None = None,
    input_context=None,
    drop_remainder: bool | None = None,
    repeat: bool = False,
    with_video_ids: bool = False,
    only_videos: Collection[str] | None = None,
    skip_videos: Collection[str] = (),
    start_example: int = 0,
    finish_on_device: bool = False,
    decode_counter=None,
    teacher_spec: ClipSpec | None = None,
    class_balanced: bool = False,
):
    """A tf.data.Dataset of (clips float32 [B, T, crop, crop, C], labels int32 [B]).

    prepared_dir / split: the folder `actrec prepare` wrote and one of its splits.
    batch_size: the batch this pipeline yields; under tf.distribute pass the per-replica
        batch (`input_context.get_per_replica_batch_size(global_batch)`).
    training: shuffled, random sampling, crop and flip; else the split's order, centres,
        centre crop.
    seed: makes the dataset deterministic (two builds yield identical batches).
    input_context: a tf.distribute.InputContext (from `distribute_datasets_from_function`):
        pipeline i of n reads positions i, i + n, ... of every epoch (actrec.data.input.order),
        and tf.data auto-sharding is turned off.
    drop_remainder: default `training`.
    repeat: epoch after epoch, forever; else one epoch.
    with_video_ids: also yield the video ids, string [B] (for per-video evaluation).
    only_videos / skip_videos: read only these videos of the split / all but these (a
        validation hold-out, actrec.data.input.holdout).
    start_example: the first example (of this pipeline) to yield; the ones before it are
        neither read nor decoded. With drop_remainder, batch b starts at example b * B.
    finish_on_device: training only; yield ((parts, geometry int32 [B, 5]), labels) for
        `batch_finisher`: the decoded uint8 parts (a window around the crop per RGB frame,
        the crop of each flow field), each padded to the largest short side of the frames.
    decode_counter: an int64 tf.Variable to add 1 to for every clip decoded.
    teacher_spec: a distilled run's teacher flow ClipSpec (actrec.train.distillation.loss): each
        finish_on_device element also holds the teacher's flow parts of the same frames,
        crop box and flip (`batch_finisher(spec, teacher_spec)` finishes both).
    class_balanced: training only; the classes drawn equally often, each epoch the split's
        length (actrec.data.input.balanced_order; same resume and pipeline contract).
    Raises DatasetError / ConfigError before building when the data cannot give `spec`.
    """
    import tensorflow as tf

    _checked_arguments(batch_size, start_example, finish_on_device, training, teacher_spec)
    prepared_dir = Path(prepared_dir)
    info = dataset_info(prepared_dir)
    check_clip_spec(info, spec)
    videos = holdout.selected_videos(
        split_videos(prepared_dir, read_manifest(prepared_dir), split), only_videos, skip_videos
    )
    num_pipelines, pipeline_id = _pipeline_count(input_context)
    per_epoch = order.examples_per_epoch(len(videos), num_pipelines, pipeline_id)
    if per_epoch == 0:
        raise DatasetError(
            f"{prepared_dir}: the {split!r} split has {len(videos)} videos, fewer than the "
            f"{num_pipelines} input pipelines (workers) reading it; use fewer workers or more "
            "videos"
        )
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ConfigError(f"seed={seed!r} is not valid; use a whole number or None")
    order_seed = None
    if training:
        order_seed = seed if seed is not None else random.SystemRandom().randrange(1 << 62)
    drop_remainder = training if drop_remainder is None else drop_remainder

    end = tf.int64.max if repeat else max(per_epoch, start_example)
    indices = tf.data.Dataset.range(start_example, end)
    # The map functions branch on Python values only (any branch on a tensor is a tf.cond of
    # their own): no AutoGraph, whose conversion of their source takes seconds per pipeline.
    if training and class_balanced:
        labels = [int(video["label"]) for video in videos]

        def example_video(example):
            return balanced_order.balanced_example_video(
                example, labels, num_pipelines, pipeline_id, order_seed
            )
    else:

        def example_video(example):
            return order.example_video(example, len(videos), num_pipelines, pipeline_id, order_seed)

    examples = indices.map(tf.autograph.experimental.do_not_convert(example_video)).map(
        _example_function(
            videos,
            spec,
            training,
            {
                "finish_on_device": finish_on_device,
                "with_video_ids": with_video_ids,
                "decode_counter": decode_counter,
                "teacher_spec": teacher_spec,
            },
        ),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    if finish_on_device:
        side = int(info.largest_short_side or spec.crop_size)
        batches = examples.padded_batch(
            batch_size,
            padded_shapes=_padded_shapes(spec, side, with_video_ids, teacher_spec),
            drop_remainder=drop_remainder,
        )
    else:
        batches = examples.batch(batch_size, drop_remainder=drop_remainder)
    options = tf.data.Options()
    options.deterministic = seed is not None or not training
    # Parallelism comes from parallel map calls; one thread per op avoids intra-op
    # scheduling and spinning costs on these small per-clip ops.
    options.threading.max_intra_op_parallelism = 1
    if input_context is not None:
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return batches.prefetch(tf.data.AUTOTUNE).with_options(options)
