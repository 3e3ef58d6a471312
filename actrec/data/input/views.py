"""Multi-view test inputs (docs/architecture.md §6): every video as num_clips x num_crops views.

    videos (in order) -> header -> for each clip c: read and decode only its frames
      -> crops (1 centre, 3 along the long side, or 10 = 4 corners + centre + mirrors)
      -> one element per view -> batch

Elements are (views float32 [B, T, crop, crop, C], labels int32 [B], positions int64 [B],
video_ids string [B]): `positions` is the video's place in the split (0, 1, ...), so scores
can be summed per video while views stream through in bounded memory: one clip of one
video is decoded at a time per parallel call, and a batch holds at most B views, whatever
the number of views per video. View v of a video is clip v // num_crops, crop v % num_crops.

Values are in the scale the models take (normalisation "none" of actrec.data.input.pipeline): RGB
0-255, flow in the stored 0-255 scale (127.5 = no motion). Clip c = 0 of one clip with the
centre crop is exactly the evaluation clip of `actrec.data.input.pipeline.build_dataset`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from actrec.data.format import records
from actrec.data.format.manifest import read_manifest, split_videos
from actrec.data.input import augment, clips, sampling
from actrec.data.input.clip_spec import ClipSpec, check_clip_spec, dataset_info
from actrec.data.input.crop_layouts import CROP_COUNTS, crop_layouts_text
from actrec.errors import ConfigError


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
                f"num_crops={self.num_crops!r} is not valid; use {crop_layouts_text()}"
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
    # One branch per layout of actrec.data.input.crop_layouts.CROP_LAYOUTS.
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


def _video_views_function(spec: ViewSpec):
    """(position, shard path, header offset, label) -> a Dataset of (view, label, position,
    video_id)."""
    import tensorflow as tf

    clip = spec.clip
    is_flow = clip.modality == "flow"

    def video_views(position, path, offset, label):
        header = records.read_header(path, offset)
        # flow t lies between frames t and t + 1
        num_frames = header["num_frames"] - 1 if is_flow else header["num_frames"]
        starts = sampling.test_clip_starts(
            num_frames,
            clip.num_segments,
            spec.num_clips,
            clip.sampling,
            clip.new_length,
            clip.frame_interval,
        )  # [num_clips, S]
        video_id = header["video_id"]

        def views_of(clip_index):
            frames = clips.evaluation_frames(
                path, header, starts[clip_index], clip
            )  # [S, H, W, C]; only this clip's frames are read and decoded
            return crops_of_clip(frames, spec)  # [crops, S, crop, crop, C]

        views = tf.data.Dataset.range(spec.num_clips).map(views_of).unbatch()
        return views.map(lambda view: (view, label, position, video_id))

    # TensorFlow's control flow only (as the training pipeline's): no AutoGraph conversion.
    return tf.autograph.experimental.do_not_convert(video_views)


def build_view_dataset(
    prepared_dir: Path | str,
    split: str,
    spec: ViewSpec,
    batch_size: int,
    parallel_videos: int = 4,
    videos: Sequence[int] | None = None,
):
    """A tf.data.Dataset of (views [B, T, crop, crop, C], labels [B], positions [B],
    video_ids [B]) over every video of `split`, in the split's order (see module doc).

    batch_size: views per batch (the chunk the model sees at once).
    parallel_videos: videos decoded side by side.
    videos: only these videos (their places in the split), in this order; `positions`
        then count them 0, 1, ... (a worker's share of an evaluation).
    """
    import tensorflow as tf

    if not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"batch_size={batch_size!r} is not valid; use a whole number >= 1")
    prepared_dir = Path(prepared_dir)
    check_clip_spec(dataset_info(prepared_dir), spec.clip)
    located_videos = split_videos(prepared_dir, read_manifest(prepared_dir), split)
    videos = located_videos if videos is None else [located_videos[index] for index in videos]
    located = tf.data.Dataset.from_tensor_slices(
        (
            tf.range(len(videos), dtype=tf.int64),
            [str(video["shard_path"]) for video in videos],
            tf.constant([video["offset"] for video in videos], tf.int64),
            tf.constant([video["label"] for video in videos], tf.int32),
        )
    )  # in the split's order
    views = located.interleave(
        _video_views_function(spec),
        cycle_length=max(1, parallel_videos),
        block_length=spec.num_views,
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    return views.batch(batch_size).prefetch(tf.data.AUTOTUNE)
