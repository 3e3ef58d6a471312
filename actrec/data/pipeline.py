"""tf.data input pipelines over prepared shards (DESIGN.md §2, §5): train and evaluation.

    shard files -> per-worker sharding -> interleaved reading -> shuffle (training)
      -> parse -> sample frame indices -> decode only those frames -> crop / flip
      -> normalise -> batch -> prefetch

`build_dataset` yields `(clips, labels)`: clips float32 [B, T, crop, crop, C] with
T = num_segments and C = 3 (RGB) or 2 * new_length (flow, interleaved [x0, y0, x1, y1, ...]);
labels int32 [B] (-1 for unlabelled splits).

Training: TSN segment sampling with a random offset per segment (or TSM dense clips from
a random start), multi-scale / corner crop, random flip (flow-aware). Evaluation: segment
centres (or a centred dense clip), short side resized to scale_size, centre crop, no
shuffle, no flip.

Determinism: with `seed`, the file order, the shuffle and every random draw are fixed:
each element's randomness comes from a seeded `tf.data.Dataset.random` stream zipped with
the records (one int64 per element, split into stateless seeds for sampling, crop and
flip), and `Options.deterministic` is on, so two builds yield identical batches; a new
iteration over the same dataset (next epoch) draws new, equally reproducible values.
Without `seed`, training trades determinism for throughput (parallel calls may reorder).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from actrec.data import augment, sampling, shards
from actrec.data.manifest import read_manifest, shard_paths
from actrec.data.video import FrameSize
from actrec.errors import ConfigError, DatasetError

MODALITIES = ("rgb", "flow")
DEFAULT_SHUFFLE_BUFFER = 128
DEFAULT_CYCLE_LENGTH = 8
# Seeds of different input pipelines (workers) are this far apart.
PIPELINE_SEED_STRIDE = 1_000_003


@dataclass(frozen=True)
class ClipSpec:
    """What one training / evaluation example is.

    modality: "rgb" or "flow".
    num_segments: T, frames (or flow stacks) per clip.
    new_length: L, consecutive frames per segment: 1 for RGB; flow stacks L flow frames
        into 2 L channels (recipes use 5).
    crop_size: output side in pixels.
    sampling: "tsn" (one frame per segment) or "dense" (TSM: T frames every
        frame_interval frames).
    scale_size: evaluation resizes the short side to this before the centre crop
        (default crop_size * 256 / 224).
    normalization: "none" keeps the stored scale and lets the model apply its backbone's
        preprocessing (actrec.models.preprocessing): RGB in [0, 255], flow in [0, 255] with
        127.5 = no motion (the quantised scale of DESIGN.md §2). "minus_one_one": RGB / 127.5 - 1,
        flow pixels / 20, both in [-1, 1]. "imagenet" (RGB only): ImageNet mean / std.
    flip: random horizontal flip in training.
    scales, max_distort, fixed_crop, more_fixed_crops: TSN multi-scale crop (see
        augment.multi_scale_crop_box): 13 fixed positions with more_fixed_crops, else 5.
    """

    modality: str = "rgb"
    num_segments: int = 8
    new_length: int = 1
    crop_size: int = 224
    sampling: str = "tsn"
    frame_interval: int = 2
    scale_size: int | None = None
    normalization: str = "none"
    flip: bool = True
    scales: tuple[float, ...] = field(default=augment.MULTI_SCALES)
    max_distort: int = 1
    fixed_crop: bool = True
    more_fixed_crops: bool = False

    def __post_init__(self) -> None:
        if self.modality not in MODALITIES:
            raise ConfigError(
                f"modality={self.modality!r} is not valid; choose one of: {', '.join(MODALITIES)}"
            )
        if self.sampling not in sampling.SAMPLINGS:
            raise ConfigError(
                f"sampling={self.sampling!r} is not valid; choose one of: "
                f"{', '.join(sampling.SAMPLINGS)}"
            )
        for name in ("num_segments", "new_length", "crop_size", "frame_interval"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name}={value!r} is not valid; use a whole number >= 1")
        if self.modality == "rgb" and self.new_length != 1:
            raise ConfigError(
                f"new_length={self.new_length} with modality 'rgb': RGB clips take one frame "
                "per segment; use new_length=1 (stacking applies to flow)"
            )
        if self.scale_size is not None and (
            not isinstance(self.scale_size, int) or self.scale_size < self.crop_size
        ):
            raise ConfigError(
                f"scale_size={self.scale_size!r} is not valid; use a whole number >= "
                f"crop_size={self.crop_size}, or None for crop_size * 256 / 224"
            )
        if self.normalization not in augment.NORMALIZATIONS:
            raise ConfigError(
                f"normalization={self.normalization!r} is not valid; choose one of: "
                f"{', '.join(augment.NORMALIZATIONS)}"
            )
        if self.modality == "flow" and self.normalization == "imagenet":
            raise ConfigError(
                "normalization='imagenet' does not apply to flow; use 'none' (stored 0-255 "
                "scale) or 'minus_one_one' for the flow stream"
            )

    @property
    def channels(self) -> int:
        """C of the clips: 3 for RGB, 2 * new_length for flow."""
        return 3 if self.modality == "rgb" else 2 * self.new_length

    @property
    def eval_scale_size(self) -> int:
        """The short side evaluation resizes to before its centre crop."""
        if self.scale_size is not None:
            return self.scale_size
        return augment.default_scale_size(self.crop_size)


@dataclass(frozen=True)
class DatasetInfo:
    """What a prepared folder holds (from its manifest).

    frame_short_side: the short side of the stored frames when the preparation fixed it
        (--size 256, 340x256), else that of the first record of the first shard; None when
        no record could be read.
    """

    prepared_dir: Path
    classes: tuple[str, ...]
    num_videos: dict[str, int]
    has_flow: bool
    flow_method: str
    frame_short_side: int | None

    @property
    def num_classes(self) -> int:
        return len(self.classes)


def _first_record_short_side(paths: list[Path]) -> int | None:
    """min(height, width) stored in the first record of the first shard, or None."""
    import tensorflow as tf

    for path in paths:
        for serialized in tf.data.TFRecordDataset(str(path)).take(1):
            context, _ = tf.io.parse_single_sequence_example(
                serialized,
                context_features={
                    shards.HEIGHT_KEY: tf.io.FixedLenFeature([], tf.int64),
                    shards.WIDTH_KEY: tf.io.FixedLenFeature([], tf.int64),
                },
            )
            return int(min(context[shards.HEIGHT_KEY], context[shards.WIDTH_KEY]))
    return None


def _frame_short_side(prepared_dir: Path, manifest: dict) -> int | None:
    frame_size = FrameSize.parse(manifest.get("settings", {}).get("frame_size", "original"))
    if frame_size.is_fixed:
        return min(int(frame_size.width), int(frame_size.height))
    if frame_size.short_side is not None:
        return int(frame_size.short_side)
    for split, info in manifest.get("splits", {}).items():
        if info.get("shards"):
            return _first_record_short_side(shard_paths(prepared_dir, manifest, split))
    return None


def dataset_info(prepared_dir: Path | str) -> DatasetInfo:
    """Classes, videos per split, flow presence and frame size of a prepared folder."""
    prepared_dir = Path(prepared_dir)
    manifest = read_manifest(prepared_dir)
    flow_method = str(manifest.get("settings", {}).get("flow", "none"))
    return DatasetInfo(
        prepared_dir=prepared_dir,
        classes=tuple(manifest.get("classes", ())),
        num_videos={
            split: int(info.get("videos", 0)) for split, info in manifest["splits"].items()
        },
        has_flow=flow_method != "none",
        flow_method=flow_method,
        frame_short_side=_frame_short_side(prepared_dir, manifest),
    )


def check_clip_spec(info: DatasetInfo, spec: ClipSpec) -> None:
    """DatasetError when the prepared data cannot give `spec`'s clips."""
    if spec.modality == "flow" and not info.has_flow:
        raise DatasetError(
            f"{info.prepared_dir} was prepared without optical flow (--flow none), so it has no "
            "flow for modality 'flow'; prepare it again with flow, e.g. "
            f"`actrec prepare DATASET --flow dis --out {info.prepared_dir}` (into a new folder)"
        )
    if info.frame_short_side is not None and spec.crop_size > info.frame_short_side:
        raise DatasetError(
            f"crop_size={spec.crop_size} exceeds the short side of the frames stored in "
            f"{info.prepared_dir} ({info.frame_short_side} px); use a crop_size <= "
            f"{info.frame_short_side}, or prepare with a larger --size"
        )


# --- per-example graph ---------------------------------------------------------------------


def stack_flow_frames(flow, num_segments: int, new_length: int):
    """[S * L, H, W, 2] -> [S, H, W, 2 L], channels interleaved [x0, y0, x1, y1, ...]."""
    import tensorflow as tf

    shape = tf.shape(flow)
    height, width = shape[1], shape[2]
    # [S*L, H, W, 2] -> [S, L, H, W, 2]
    grouped = tf.reshape(flow, [num_segments, new_length, height, width, 2])
    moved = tf.transpose(grouped, [0, 2, 3, 1, 4])  # [S, L, H, W, 2] -> [S, H, W, L, 2]
    # [S, H, W, L, 2] -> [S, H, W, 2L]
    return tf.reshape(moved, [num_segments, height, width, 2 * new_length])


def _sampled_indices(num_frames, spec: ClipSpec, training: bool, seed):
    """Flat frame (or flow frame) indices of one clip: int32 [S * L]."""
    import tensorflow as tf

    if spec.sampling == "tsn":
        indices = sampling.segment_indices(
            num_frames, spec.num_segments, spec.new_length, training, seed
        )  # [S, L]
    else:
        num_starts = tf.maximum(tf.cast(num_frames, tf.int32) - (spec.new_length - 1), 1)
        starts = sampling.dense_clip_indices(
            num_starts, spec.num_segments, spec.frame_interval, training, seed
        )  # [S]
        indices = sampling.consecutive_indices(starts, spec.new_length, num_frames)  # [S, L]
    return tf.reshape(indices, [-1])  # [S, L] -> [S*L]


def _decode_unique(decode, indices):
    """decode(unique indices) gathered back to `indices`: each frame is decoded once."""
    import tensorflow as tf

    unique, positions = tf.unique(indices)
    return tf.gather(decode(unique), positions)


def _clip_of_record(parsed: dict, spec: ClipSpec, training: bool, seed):
    """Decoded, cropped, flipped, normalised clip: float32 [S, crop, crop, C]."""
    import tensorflow as tf

    sample_seed, crop_seed, flip_seed = sampling.split_seed(seed, 3)
    is_flow = spec.modality == "flow"
    if is_flow:
        num_flow_frames = parsed["num_frames"] - 1  # flow t lies between frames t and t+1
        indices = _sampled_indices(num_flow_frames, spec, training, sample_seed)  # [S*L]
        quantized = _decode_unique(
            lambda unique: shards.decode_flow_frames(parsed["flow_x"], parsed["flow_y"], unique),
            indices,
        )  # [S*L, H, W, 2] uint8
        pixels = shards.dequantize_flow_tensor(quantized)  # [S*L, H, W, 2] float32
        clip = stack_flow_frames(pixels, spec.num_segments, spec.new_length)  # [S, H, W, 2L]
    else:
        indices = _sampled_indices(parsed["num_frames"], spec, training, sample_seed)  # [S]
        frames = _decode_unique(
            lambda unique: shards.decode_rgb_frames(parsed["rgb"], unique), indices
        )
        clip = tf.cast(frames, tf.float32)  # [S, H, W, 3]
    if training:
        clip = augment.multi_scale_crop(
            clip,
            spec.crop_size,
            crop_seed,
            scales=spec.scales,
            max_distort=spec.max_distort,
            fixed_crop=spec.fixed_crop,
            more_fixed_crops=spec.more_fixed_crops,
        )
        if spec.flip:
            clip = augment.random_horizontal_flip(clip, is_flow, flip_seed)
    else:
        clip = augment.centre_crop(clip, spec.crop_size, spec.eval_scale_size)
    if is_flow and spec.normalization == "none":
        clip = augment.flow_to_stored_scale(clip)
    elif is_flow:
        clip = augment.normalize_flow(clip)
    else:
        clip = augment.normalize_rgb(clip, spec.normalization)
    return tf.ensure_shape(clip, [spec.num_segments, spec.crop_size, spec.crop_size, spec.channels])


def _example_function(spec: ClipSpec, training: bool, with_video_ids: bool):
    """(serialized record, int64 random value) -> (clip, label[, video_id])."""
    import tensorflow as tf

    def example(serialized, random_value):
        parsed = shards.parse_video_record(serialized, with_flow=spec.modality == "flow")
        seed = tf.stack([random_value, tf.constant(0, tf.int64)])  # [2] stateless seed
        clip = _clip_of_record(parsed, spec, training, seed)
        label = tf.cast(parsed["label"], tf.int32)
        if with_video_ids:
            return clip, label, parsed["video_id"]
        return clip, label

    return example


# --- dataset ---------------------------------------------------------------------------------


def _pipeline_seed(seed: int | None, input_context) -> int | None:
    if seed is None:
        return None
    if not isinstance(seed, int):
        raise ConfigError(f"seed={seed!r} is not valid; use a whole number or None")
    pipeline_id = 0 if input_context is None else int(input_context.input_pipeline_id)
    return seed + PIPELINE_SEED_STRIDE * pipeline_id


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


def _records(
    paths: list[Path],
    training: bool,
    seed: int | None,
    input_context,
    cycle_length: int,
):
    """Serialized records of this input pipeline's share, files interleaved.

    Sharding by file when there are at least as many files as input pipelines (each
    pipeline reads whole files, shuffled per epoch in training); else by record (every
    pipeline reads all files in the same fixed order and keeps every n-th record). Either
    way the pipelines' videos are disjoint and together are the whole split. File sharding
    can give pipelines unequal numbers of videos: a training loop that needs equal step
    counts should repeat the dataset and count steps.
    """
    import tensorflow as tf

    count, index = _pipeline_count(input_context)
    by_file = count > 1 and len(paths) >= count
    by_record = count > 1 and not by_file
    files = tf.data.Dataset.from_tensor_slices([str(path) for path in paths])
    if by_file:
        files = files.shard(count, index)
    num_files = -(-len(paths) // count) if by_file else len(paths)
    if training and not by_record:  # by record, every pipeline must read the same order
        files = files.shuffle(num_files, seed=seed, reshuffle_each_iteration=True)
    records = files.interleave(
        tf.data.TFRecordDataset,
        cycle_length=max(1, min(cycle_length, num_files)),
        block_length=1,
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True if by_record else None,
    )
    if by_record:
        records = records.shard(count, index)
    return records


def build_dataset(
    prepared_dir: Path | str,
    split: str,
    spec: ClipSpec,
    batch_size: int,
    training: bool,
    seed: int | None = None,
    input_context=None,
    shuffle_buffer: int = DEFAULT_SHUFFLE_BUFFER,
    drop_remainder: bool | None = None,
    repeat: bool = False,
    cycle_length: int = DEFAULT_CYCLE_LENGTH,
    with_video_ids: bool = False,
):
    """A tf.data.Dataset of (clips float32 [B, T, crop, crop, C], labels int32 [B]).

    prepared_dir / split: the folder `actrec prepare` wrote and one of its splits.
    batch_size: the batch this pipeline yields; under tf.distribute pass the per-replica
        batch (`input_context.get_per_replica_batch_size(global_batch)`).
    training: random sampling, crop and flip, shuffled; else centres, centre crop, in order.
    seed: makes the dataset deterministic (two builds yield identical batches); input
        pipelines derive their own seeds from it.
    input_context: a tf.distribute.InputContext (from `distribute_datasets_from_function`):
        this pipeline reads only its share (see `_records`), and tf.data auto-sharding is
        turned off.
    shuffle_buffer: records (whole serialised videos) held for shuffling: memory is about
        shuffle_buffer x record size.
    drop_remainder: default `training`.
    repeat: repeat forever (each repetition reshuffles and redraws).
    with_video_ids: also yield the video ids, string [B] (for per-video evaluation).
    Raises DatasetError / ConfigError before building when the data cannot give `spec`.
    """
    import tensorflow as tf

    if not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"batch_size={batch_size!r} is not valid; use a whole number >= 1")
    if not isinstance(shuffle_buffer, int) or shuffle_buffer < 1:
        raise ConfigError(f"shuffle_buffer={shuffle_buffer!r} is not valid; use a number >= 1")
    if not isinstance(cycle_length, int) or cycle_length < 1:
        raise ConfigError(f"cycle_length={cycle_length!r} is not valid; use a number >= 1")
    prepared_dir = Path(prepared_dir)
    info = dataset_info(prepared_dir)
    check_clip_spec(info, spec)
    paths = shard_paths(prepared_dir, read_manifest(prepared_dir), split)
    pipeline_seed = _pipeline_seed(seed, input_context)
    drop_remainder = training if drop_remainder is None else drop_remainder

    records = _records(paths, training, pipeline_seed, input_context, cycle_length)
    if training:
        records = records.shuffle(shuffle_buffer, seed=pipeline_seed, reshuffle_each_iteration=True)
    if repeat:
        records = records.repeat()
    random_values = tf.data.Dataset.random(seed=pipeline_seed, rerandomize_each_iteration=True)
    examples = tf.data.Dataset.zip(records, random_values).map(
        _example_function(spec, training, with_video_ids),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    batches = examples.batch(batch_size, drop_remainder=drop_remainder).prefetch(tf.data.AUTOTUNE)
    options = tf.data.Options()
    options.deterministic = seed is not None or not training
    if input_context is not None:
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return batches.with_options(options)
