"""The format-2 training pipeline against the format-1 one it replaces: the same frames,
crop boxes, flips and pixels (to float rounding); and its position: starting at example k
equals reading on from k, without decoding the examples skipped."""

from __future__ import annotations

import json

import numpy as np
import pytest

from actrec.data.format import records, shards
from actrec.data.format.manifest import read_manifest, split_videos
from actrec.data.input import augment, clip_reading, order, sampling, training_clips
from actrec.data.input.clip_spec import ClipSpec
from actrec.data.input.clips import stack_flow_frames
from actrec.data.input.pipeline import build_dataset
from actrec.data.input.training_clips import finish_batch
from actrec.errors import DatasetError

tf = pytest.importorskip("tensorflow")

SPECS = [
    ClipSpec("rgb", 3, crop_size=32),
    ClipSpec("rgb", 4, crop_size=32, sampling="dense", frame_interval=2),
    ClipSpec("flow", 2, new_length=3, crop_size=32),
    ClipSpec("flow", 2, new_length=5, crop_size=32, normalization="minus_one_one"),
]
# Decoding only the crop box (with its chroma margin) gives the whole frame's pixels; what
# remains is float rounding: format 2 flips before resizing and scales flow after it.
TOLERANCE = 1e-3  # grey levels


def _format1_clip(decoded: dict, spec: ClipSpec, seed):
    """The clip format 1's pipeline made of the same decoded video: sample, float, crop,
    resize, flip, scale (its per-example graph, from the same building blocks)."""
    sample_seed, crop_seed, flip_seed = sampling.split_seed(seed, 3)
    is_flow = spec.modality == "flow"
    frames = decoded["flow"] if is_flow else decoded["frames"]
    starts = clip_reading.clip_starts(len(frames), spec, True, sample_seed)
    indices = tf.reshape(sampling.consecutive_indices(starts, spec.new_length, len(frames)), [-1])
    picked = tf.gather(frames, indices)
    if is_flow:
        pixels = shards.dequantize_flow_tensor(picked)
        clip = stack_flow_frames(pixels, spec.num_segments, spec.new_length)
    else:
        clip = tf.cast(picked, tf.float32)
    clip = augment.multi_scale_crop(
        clip, spec.crop_size, crop_seed, scales=spec.scales, more_fixed_crops=spec.more_fix_crop
    )
    clip = augment.random_horizontal_flip(clip, is_flow, flip_seed)
    if not is_flow:
        return clip.numpy()
    if spec.normalization == "none":
        return augment.flow_to_stored_scale(clip).numpy()
    return augment.normalize_flow(clip).numpy()


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: f"{spec.modality}-{spec.sampling}")
def test_training_clips_equal_format_1s_for_the_same_seeds(tiny_synthetic_prepared, spec):
    prepared = tiny_synthetic_prepared
    videos = {
        video_id: records.decode_video(r)
        for video_id, r in records.iter_split_videos(prepared, "train")
    }
    ids = list(videos)
    dataset = build_dataset(prepared, "train", spec, 4, True, seed=11, with_video_ids=True)
    scale = 255.0 if spec.normalization == "none" else 1.0
    compared, mirrored = 0, 0
    for batch_index, (batch, _, video_ids) in enumerate(dataset.take(3)):
        for slot, (clip, video_id) in enumerate(zip(batch.numpy(), video_ids.numpy(), strict=True)):
            example = batch_index * 4 + slot
            video, value = order.example_video(example, len(ids), 1, 0, 11)
            assert ids[int(video)] == video_id.decode()  # the order's video
            seed = tf.stack([value, tf.constant(0, tf.int64)])
            expected = _format1_clip(videos[video_id.decode()], spec, seed)
            difference = np.abs(clip - expected) / scale * 255.0  # in grey levels
            assert difference.max() <= TOLERANCE, (video_id, difference.max())
            compared += 1
            flip_seed = sampling.split_seed(seed, 3)[2]
            mirrored += int(sampling.uniform_unit([], flip_seed).numpy() < 0.5)
    assert compared == 12 and 0 < mirrored < 12  # both sides of the flip were compared


def test_crop_boxes_and_flips_are_format_1s(tiny_synthetic_prepared):
    spec = ClipSpec("rgb", 3, crop_size=32)
    dataset = build_dataset(
        tiny_synthetic_prepared, "train", spec, 8, True, seed=3, finish_on_device=True
    )
    (_, geometry), _ = next(iter(dataset))
    for example, (_, _, height, width, flipped) in enumerate(geometry.numpy()):
        _, value = order.example_video(example, 16, 1, 0, 3)
        _, crop_seed, flip_seed = sampling.split_seed(
            tf.stack([value, tf.constant(0, tf.int64)]), 3
        )
        box = augment.multi_scale_crop_box(48, 64, 32, crop_seed).numpy()
        assert (height, width) == (box[2], box[3])
        assert flipped == int(sampling.uniform_unit([], flip_seed).numpy() < 0.5)


@pytest.mark.parametrize("spec", SPECS[::2], ids=lambda spec: spec.modality)
def test_finishing_on_the_device_gives_the_pipelines_clips(tiny_synthetic_prepared, spec):
    prepared = tiny_synthetic_prepared
    finished = next(iter(build_dataset(prepared, "train", spec, 6, True, seed=5)))[0]
    (parts, geometry), _ = next(
        iter(build_dataset(prepared, "train", spec, 6, True, seed=5, finish_on_device=True))
    )
    # a uint8 window (crop + chroma margin) per RGB frame, a crop per flow field: padded
    side = 48 if spec.modality == "flow" else 48 + 2 * training_clips.CHROMA_MARGIN
    assert len(parts) == spec.num_segments * (1 if spec.modality == "rgb" else 2 * spec.new_length)
    assert all(part.dtype == tf.uint8 and part.shape[1:3] == (side, side) for part in parts)
    np.testing.assert_array_equal(finish_batch(parts, geometry, spec).numpy(), finished.numpy())


def test_starting_at_example_k_is_reading_on_from_k_without_decoding_before_it(
    tiny_synthetic_prepared,
):
    spec = ClipSpec("flow", 2, new_length=2, crop_size=32)

    def batches(start, counter=None, count=2):
        dataset = build_dataset(
            tiny_synthetic_prepared,
            "train",
            spec,
            4,
            True,
            seed=9,
            repeat=True,
            with_video_ids=True,
            start_example=start,
            decode_counter=counter,
        )
        return [tuple(part.numpy() for part in batch) for batch in dataset.take(count)]

    whole = batches(0, count=27)  # 6.75 epochs of 16 videos
    counter = tf.Variable(0, dtype=tf.int64)
    resumed = batches(100, counter)  # batch 25: epoch 6, in the middle of it
    for mine, theirs in zip(resumed, whole[25:], strict=True):
        for part, other in zip(mine, theirs, strict=True):
            np.testing.assert_array_equal(part, other)
    assert 8 <= int(counter.numpy()) < 100  # the two batches (and prefetching), not the 100
    epoch_ids = [video_id for batch in whole[:4] for video_id in batch[2]]
    assert len(set(epoch_ids)) == 16  # an epoch is every video once


def test_two_input_pipelines_read_the_clips_of_one_with_the_double_batch(tiny_synthetic_prepared):
    spec = ClipSpec("rgb", 3, crop_size=32)

    def first_batch(batch_size, pipelines, index):
        context = tf.distribute.InputContext(num_input_pipelines=pipelines, input_pipeline_id=index)
        dataset = build_dataset(
            tiny_synthetic_prepared,
            "train",
            spec,
            batch_size,
            True,
            seed=4,
            input_context=context,
            with_video_ids=True,
        )
        clips_, _, ids = next(iter(dataset))
        return dict(zip((i.decode() for i in ids.numpy()), clips_.numpy(), strict=True))

    one = first_batch(4, 1, 0)
    two = {**first_batch(2, 2, 0), **first_batch(2, 2, 1)}
    assert sorted(one) == sorted(two)
    for video_id, clip in one.items():
        np.testing.assert_array_equal(clip, two[video_id])


def test_format_1_folder_names_itself_and_the_migration(tiny_synthetic_prepared, tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    manifest = json.loads((tiny_synthetic_prepared / "manifest.json").read_text())
    (old / "manifest.json").write_text(json.dumps({**manifest, "format_version": 1}))
    with pytest.raises(
        DatasetError, match=r"old holds format-1 shards.*actrec migrate .*old --out"
    ):
        build_dataset(old, "train", SPECS[0], 2, True)


def test_more_input_pipelines_than_videos_is_a_dataset_error(tiny_synthetic_prepared):
    context = tf.distribute.InputContext(num_input_pipelines=20, input_pipeline_id=19)
    with pytest.raises(DatasetError, match=r"'train' split has 16 videos, fewer than the 20"):
        build_dataset(tiny_synthetic_prepared, "train", SPECS[0], 2, True, input_context=context)


def test_frame_reads_unrolled_or_not_return_the_stored_jpegs(tiny_synthetic_prepared):
    """rgb_jpegs unrolls its reads when the number of frames is known while tracing, and
    reads them as runs when it is not: both give the JPEGs the video stores."""
    prepared = tiny_synthetic_prepared
    first = split_videos(prepared, read_manifest(prepared), "test")[0]
    video_id, video_records = next(records.iter_split_videos(prepared, "test"))
    stored = records.video_record(video_records)
    assert video_id == first["id"] == stored.video_id
    path = tf.constant(str(first["shard_path"]))
    header = records.read_header(path, first["offset"])
    indices = [11, 0, 5, 5]

    @tf.function(input_signature=[tf.TensorSpec([None], tf.int32)])
    def unknown_count(frames):
        return records.rgb_jpegs(path, header, frames)

    known = records.rgb_jpegs(path, header, tf.constant(indices)).numpy().tolist()
    unknown = unknown_count(tf.constant(indices)).numpy().tolist()
    assert known == unknown == [stored.rgb_jpegs[index] for index in indices]
