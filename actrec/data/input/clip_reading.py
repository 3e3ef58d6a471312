"""The records one clip reads: where its stacks start (TSN segments or a dense clip) and
the JPEGs of those frames, one read per stack (format 2, actrec.data.format.records).

Training (actrec.data.input.training_clips) and evaluation (actrec.data.input.clips) both
start here.
"""

from __future__ import annotations

from actrec.data.format import records
from actrec.data.input import sampling


def _tf():
    import tensorflow as tf

    return tf


def clip_starts(num_frames, spec, training: bool, seed):
    """First frame (or flow frame) of each segment's stack: int32 [S]."""
    tf = _tf()
    if spec.sampling == "tsn":
        return sampling.segment_starts(
            num_frames, spec.num_segments, spec.new_length, training, seed
        )  # [S]
    num_starts = tf.maximum(tf.cast(num_frames, tf.int32) - (spec.new_length - 1), 1)
    return sampling.dense_clip_indices(
        num_starts, spec.num_segments, spec.frame_interval, training, seed
    )  # [S]


def clip_jpegs(path, header: dict, starts, spec):
    """The JPEGs of the clip whose stacks start at `starts` (int32 [S]), one read per stack.

    RGB: string [S]. Flow: (x, y) string [S * L] each, in stack order; a video with fewer
    than L flow frames repeats its last one (sampling.consecutive_indices).
    """
    tf = _tf()
    if spec.modality == "rgb":
        return records.rgb_jpegs(path, header, starts)
    num_flow = tf.cast(header["num_frames"] - 1, tf.int32)  # flow t: frames t and t + 1
    run = tf.minimum(spec.new_length, num_flow)  # records read from each start
    flow_x, flow_y = records.flow_jpeg_runs(path, header, starts, run)  # [S * run]
    indices = sampling.consecutive_indices(starts, spec.new_length, num_flow)  # [S, L]
    within = tf.minimum(indices - starts[:, None], run - 1)  # [S, L] position in its run
    flat = tf.reshape(tf.range(spec.num_segments)[:, None] * run + within, [-1])  # [S*L]
    return tf.gather(flow_x, flat), tf.gather(flow_y, flat)
