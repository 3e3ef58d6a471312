"""The format-1 input pipeline (actrec before record format 2), for benchmarks/pipeline.py.

Format 1 stored a video as one record; its training pipeline parsed the whole record,
decoded the sampled frames with tf.map_fn, cast them to float at full size, then cropped,
resized and flipped (every clip resized, flow stacked with tf.stack and transposed at full
size). This is that per-example graph, built from the library's unchanged building blocks,
so "before" is measured in the same run, on the same JPEGs, as "after".
"""

from __future__ import annotations

from pathlib import Path

from actrec.data.format import records, shards
from actrec.data.input import augment, sampling
from actrec.data.input.clips import stack_flow_frames
from actrec.data.maintenance import format1


def write_format1_shard(prepared: Path, split: str, path: Path) -> None:
    """The videos of a format-2 split, rewritten as one format-1 shard at `path`."""
    import tensorflow as tf

    with tf.io.TFRecordWriter(str(path)) as writer:
        for _, video_records in records.iter_split_videos(prepared, split):
            writer.write(format1.serialized_record(records.video_record(video_records)))


def _parsed(serialized, with_flow: bool) -> dict:
    import tensorflow as tf

    sequence_features = {shards.RGB_KEY: tf.io.FixedLenSequenceFeature([], tf.string)}
    if with_flow:
        for key in (shards.FLOW_X_KEY, shards.FLOW_Y_KEY):
            sequence_features[key] = tf.io.FixedLenSequenceFeature([], tf.string)
    context, sequences = tf.io.parse_single_sequence_example(
        serialized,
        context_features={shards.NUM_FRAMES_KEY: tf.io.FixedLenFeature([], tf.int64)},
        sequence_features=sequence_features,
    )
    return {"num_frames": context[shards.NUM_FRAMES_KEY], **sequences}


def _decoded(encoded, indices, channels: int):
    """tf.map_fn decode of the unique indices, gathered back (format 1's way)."""
    import tensorflow as tf

    unique, positions = tf.unique(indices)
    frames = tf.map_fn(
        lambda jpeg: tf.io.decode_jpeg(jpeg, channels=channels),
        tf.gather(encoded, unique),
        fn_output_signature=tf.TensorSpec([None, None, channels], tf.uint8),
    )
    return tf.gather(frames, positions)


def _training_clip(serialized, random_value, spec):
    import tensorflow as tf

    is_flow = spec.modality == "flow"
    parsed = _parsed(serialized, is_flow)
    seed = tf.stack([random_value, tf.constant(0, tf.int64)])
    sample_seed, crop_seed, flip_seed = sampling.split_seed(seed, 3)
    num_frames = parsed["num_frames"] - 1 if is_flow else parsed["num_frames"]
    indices = tf.reshape(
        sampling.segment_indices(num_frames, spec.num_segments, spec.new_length, True, sample_seed),
        [-1],
    )  # [S*L]
    if is_flow:
        flow_x = _decoded(parsed[shards.FLOW_X_KEY], indices, 1)[..., 0]
        flow_y = _decoded(parsed[shards.FLOW_Y_KEY], indices, 1)[..., 0]
        pixels = shards.dequantize_flow_tensor(tf.stack([flow_x, flow_y], axis=-1))
        clip = stack_flow_frames(pixels, spec.num_segments, spec.new_length)
    else:
        clip = tf.cast(_decoded(parsed[shards.RGB_KEY], indices, 3), tf.float32)
    clip = augment.multi_scale_crop(clip, spec.crop_size, crop_seed, scales=spec.scales)
    clip = augment.random_horizontal_flip(clip, is_flow, flip_seed)
    return augment.flow_to_stored_scale(clip) if is_flow else clip


def format1_dataset(path: Path, spec, batch_size: int, seed: int = 1):
    """Format 1's training pipeline over one shard: repeat, shuffle whole records, decode,
    crop, flip, batch (float32 clips [B, T, crop, crop, C])."""
    import tensorflow as tf

    shuffled = tf.data.TFRecordDataset(str(path)).repeat().shuffle(128, seed=seed)
    randoms = tf.data.Dataset.random(seed=seed)
    clips = tf.data.Dataset.zip(shuffled, randoms).map(
        lambda serialized, value: _training_clip(serialized, value, spec),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    options = tf.data.Options()
    options.deterministic = True
    return clips.batch(batch_size).prefetch(tf.data.AUTOTUNE).with_options(options)
