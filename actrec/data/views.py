"""Multi-view test inputs (DESIGN.md §6): every video as num_clips x num_crops views.

    shard records (in order) -> parse -> for each clip c: decode only its frames
      -> crops (1 centre, 3 along the long side, or 10 = 4 corners + centre + mirrors)
      -> one element per view -> batch

Elements are (views float32 [B, T, crop, crop, C], labels int32 [B], positions int64 [B],
video_ids string [B]): `positions` is the video's place in the split (0, 1, ...), so scores
can be summed per video while views stream through in bounded memory: one clip of one
video is decoded at a time per parallel call, and a batch holds at most B views, whatever
the number of views per video. View v of a video is clip v // num_crops, crop v % num_crops.

Values are in the scale the models take (normalisation "none" of actrec.data.pipeline): RGB
0-255, flow in the stored 0-255 scale (127.5 = no motion). Clip c = 0 of one clip with the
centre crop is exactly the evaluation clip of `actrec.data.pipeline.build_dataset`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from actrec.data import augment, sampling, shards
from actrec.data.manifest import read_manifest, shard_paths
from actrec.data.pipeline import (
    ClipSpec,
    _decode_unique,
    check_clip_spec,
    dataset_info,
    stack_flow_frames,
)
from actrec.errors import ConfigError

CROP_COUNTS = (1, 3, 10)


@dataclass(frozen=True)
class ViewSpec:
    """The views of one video: `clip` (modality, segments, crop, sampling) x clips x crops."""

    clip: ClipSpec
    num_clips: int = 1
    num_crops: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.num_clips, int) or self.num_clips < 1:
            raise ConfigError(f"num_clips={self.num_clips!r} is not valid; use a whole number >= 1")
        if self.num_crops not in CROP_COUNTS:
            raise ConfigError(
                f"num_crops={self.num_crops!r} is not valid; use 1 (centre), 3 (along the long "
                "side) or 10 (4 corners + centre, and their mirror images)"
            )

    @property
    def num_views(self) -> int:
        return self.num_clips * self.num_crops


def crops_of_clip(clip, spec: ViewSpec):
    """float32 [T, H, W, C] (flow in pixels, 0 = no motion) -> [num_crops, T, crop, crop, C]
    in the models' input scale (flow moved to the stored 0-255 scale after cropping and
    mirroring, which negates flow x)."""
    import tensorflow as tf

    crop_size, is_flow = spec.clip.crop_size, spec.clip.modality == "flow"
    if spec.num_crops == 1:
        views = augment.centre_crop(clip, crop_size, spec.clip.eval_scale_size)[None]
    elif spec.num_crops == 3:
        views = augment.three_crops(clip, crop_size)
    else:
        views = augment.ten_crops(clip, crop_size, is_flow, spec.clip.eval_scale_size)
    if is_flow:
        views = augment.flow_to_stored_scale(views)
    channels = spec.clip.channels
    return tf.ensure_shape(
        views, [spec.num_crops, spec.clip.num_segments, crop_size, crop_size, channels]
    )


def _clip_frames(parsed: dict, indices, spec: ClipSpec):
    """Decoded frames of one clip: indices int32 [S, L] -> float32 [S, H, W, C]."""
    import tensorflow as tf

    flat = tf.reshape(indices, [-1])  # [S, L] -> [S*L]
    if spec.modality == "flow":
        quantized = _decode_unique(
            lambda unique: shards.decode_flow_frames(parsed["flow_x"], parsed["flow_y"], unique),
            flat,
        )  # [S*L, H, W, 2] uint8
        pixels = shards.dequantize_flow_tensor(quantized)  # [S*L, H, W, 2]
        return stack_flow_frames(pixels, spec.num_segments, spec.new_length)  # [S, H, W, 2L]
    frames = _decode_unique(lambda unique: shards.decode_rgb_frames(parsed["rgb"], unique), flat)
    return tf.cast(frames, tf.float32)  # [S, H, W, 3]


def _video_views_function(spec: ViewSpec):
    """(position, serialized record) -> a Dataset of (view, label, position, video_id)."""
    import tensorflow as tf

    clip = spec.clip
    is_flow = clip.modality == "flow"

    def video_views(position, serialized):
        parsed = shards.parse_video_record(serialized, with_flow=is_flow)
        # flow t lies between frames t and t + 1
        num_frames = parsed["num_frames"] - 1 if is_flow else parsed["num_frames"]
        indices = sampling.test_clip_indices(
            num_frames,
            clip.num_segments,
            spec.num_clips,
            clip.sampling,
            clip.new_length,
            clip.frame_interval,
        )  # [num_clips, S, L]
        label = tf.cast(parsed["label"], tf.int32)
        video_id = parsed["video_id"]

        def views_of(clip_index):
            frames = _clip_frames(parsed, indices[clip_index], clip)  # [S, H, W, C]
            return crops_of_clip(frames, spec)  # [crops, S, crop, crop, C]

        views = tf.data.Dataset.range(spec.num_clips).map(views_of).unbatch()
        return views.map(lambda view: (view, label, position, video_id))

    return video_views


def build_view_dataset(
    prepared_dir: Path | str, split: str, spec: ViewSpec, batch_size: int, parallel_videos: int = 4
):
    """A tf.data.Dataset of (views [B, T, crop, crop, C], labels [B], positions [B],
    video_ids [B]) over every video of `split`, in the split's order (see module doc).

    batch_size: views per batch (the chunk the model sees at once).
    parallel_videos: videos decoded side by side.
    """
    import tensorflow as tf

    if not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"batch_size={batch_size!r} is not valid; use a whole number >= 1")
    prepared_dir = Path(prepared_dir)
    check_clip_spec(dataset_info(prepared_dir), spec.clip)
    paths = shard_paths(prepared_dir, read_manifest(prepared_dir), split)
    records = tf.data.TFRecordDataset([str(path) for path in paths])  # in the split's order
    views = records.enumerate().interleave(
        _video_views_function(spec),
        cycle_length=max(1, parallel_videos),
        block_length=spec.num_views,
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    return views.batch(batch_size).prefetch(tf.data.AUTOTUNE)
