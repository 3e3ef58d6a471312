"""THE evaluation clip: the sampled frames decoded whole, the short side resized to
eval_scale_size, the centre crop taken in float, the spec's normalisation.

    `evaluation_clip` = `evaluation_crop` of `evaluation_frames`

The evaluation pipeline (actrec.data.input.pipeline) uses `evaluation_clip`, the multi-view
evaluation (actrec.data.input.views) `evaluation_frames`, and the export's serving graph
`stack_flow_frames` and `evaluation_crop` on the frames it samples from its input, so the
three give the same clip. Training clips are made in actrec.data.input.training_clips;
both read their records through actrec.data.input.clip_reading (`clip_starts`,
`clip_jpegs`).
"""

from __future__ import annotations

from actrec.data.format import shards
from actrec.data.input import augment
from actrec.data.input.clip_reading import clip_jpegs

__all__ = [
    "decoded_frames",
    "evaluation_clip",
    "evaluation_crop",
    "evaluation_frames",
    "stack_flow_frames",
]


def _tf():
    import tensorflow as tf

    return tf


def decoded_frames(jpegs, spec):
    """Whole decoded frames of one clip, flow in pixels (evaluation): float32 [S, H, W, C].

    jpegs: RGB string [S]; flow (x, y) string [S*L] each.
    """
    tf = _tf()
    if spec.modality == "rgb":
        frames = tf.stack(
            [tf.io.decode_jpeg(jpegs[index], channels=3) for index in range(spec.num_segments)]
        )
        return tf.cast(frames, tf.float32)  # [S, H, W, 3]
    flow_x, flow_y = jpegs
    planes = tf.stack(
        [
            tf.io.decode_jpeg(field[index], channels=1)[..., 0]
            for index in range(spec.num_segments * spec.new_length)
            for field in (flow_x, flow_y)
        ]
    )  # [S*L*2, H, W]: x0, y0, x1, y1, ...
    shape = tf.shape(planes)
    height, width = shape[1], shape[2]
    # [S*L*2, H, W] -> [S, 2L, H, W] -> [S, H, W, 2L], in uint8 (one move of the bytes)
    grouped = tf.reshape(planes, [spec.num_segments, 2 * spec.new_length, height, width])
    return shards.dequantize_flow_tensor(tf.transpose(grouped, [0, 2, 3, 1]))


def evaluation_frames(path, header: dict, starts, spec):
    """Whole decoded frames of the evaluation clip whose stacks start at `starts` (int32
    [S]): float32 [S, H, W, C], flow in pixels. Only these frames are read and decoded."""
    return decoded_frames(clip_jpegs(path, header, starts, spec), spec)


def stack_flow_frames(flow, num_segments: int, new_length: int):
    """[S * L, H, W, 2] -> [S, H, W, 2 L], channels interleaved [x0, y0, x1, y1, ...]."""
    tf = _tf()
    shape = tf.shape(flow)
    height, width = shape[1], shape[2]
    # [S*L, H, W, 2] -> [S, L, H, W, 2]
    grouped = tf.reshape(flow, [num_segments, new_length, height, width, 2])
    moved = tf.transpose(grouped, [0, 2, 3, 1, 4])  # [S, L, H, W, 2] -> [S, H, W, L, 2]
    # [S, H, W, L, 2] -> [S, H, W, 2L]
    return tf.reshape(moved, [num_segments, height, width, 2 * new_length])


def evaluation_crop(frames, spec):
    """Decoded frames float32 [N, H, W, C] (flow in pixels, stacked [x0, y0, x1, ...]) ->
    the evaluation crops float32 [N, crop, crop, C]: short side to eval_scale_size, centre
    crop, the spec's normalisation (flow "none": the stored 0-255 scale)."""
    clip = augment.centre_crop(frames, spec.crop_size, spec.eval_scale_size)
    if spec.modality == "rgb":
        return augment.normalize_rgb(clip, spec.normalization)
    if spec.normalization == "none":
        return augment.flow_to_stored_scale(clip)
    return augment.normalize_flow(clip)


def evaluation_clip(path, header: dict, starts, spec):
    """The evaluation clip whose stacks start at `starts`: float32 [S, crop, crop, C]
    (short side to eval_scale_size, centre crop, flow on the spec's scale)."""
    return evaluation_crop(evaluation_frames(path, header, starts, spec), spec)
