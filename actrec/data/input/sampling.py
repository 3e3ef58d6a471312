"""Which frames of a video a clip uses: TSN segments, TSM dense clips, multi-clip testing.

Every function is made of TensorFlow ops, so it runs eagerly and inside tf.data graphs;
`num_frames` may be a Python int or a scalar integer tensor (for example the record's
`video/num_frames`). Results are int32 frame indices in [0, num_frames - 1].

Randomness (training) is driven by `seed`: None uses TensorFlow's global generator; an
int or a shape-[2] integer tensor uses stateless ops, so the same seed gives the same
indices, in eager code and in tf.data alike.

Flow: a video of T RGB frames has T - 1 flow frames (flow t is between frames t and t+1);
pass num_frames = T - 1 so that every stacked flow index stays <= T - 2.
"""

from __future__ import annotations

from actrec.config.choices import SAMPLINGS
from actrec.errors import ConfigError


def _tf():
    import tensorflow as tf

    return tf


def _require_positive(name: str, value: int) -> None:
    if not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name}={value!r} is not valid; use a whole number >= 1")


def stateless_seed(seed):
    """None, an int or a shape-[2] integer seed -> int64 [2] stateless seed (or None)."""
    tf = _tf()
    if seed is None:
        return None
    seed = tf.cast(tf.convert_to_tensor(seed), tf.int64)
    if seed.shape.rank == 0:
        return tf.stack([seed, tf.zeros_like(seed)])
    return tf.reshape(seed, [2])


def split_seed(seed, count: int):
    """`count` independent seeds from one: a list of int64 [2] seeds (or Nones)."""
    tf = _tf()
    seed = stateless_seed(seed)
    if seed is None:
        return [None] * count
    seeds = tf.random.experimental.stateless_split(seed, num=count)  # [count, 2]
    return [seeds[index] for index in range(count)]


def uniform_unit(shape, seed=None):
    """float64 uniform values in [0, 1) of `shape` (stateless when `seed` is given)."""
    tf = _tf()
    seed = stateless_seed(seed)
    if seed is None:
        return tf.random.uniform(shape, dtype=tf.float64)
    return tf.random.stateless_uniform(shape, seed=seed, dtype=tf.float64)


def uniform_integer(maxval, seed=None):
    """int32 scalar uniform in [0, maxval); maxval (>= 1) may be a tensor."""
    tf = _tf()
    maxval = tf.maximum(tf.cast(maxval, tf.int32), 1)
    seed = stateless_seed(seed)
    if seed is None:
        return tf.random.uniform([], minval=0, maxval=maxval, dtype=tf.int32)
    return tf.random.stateless_uniform([], seed=seed, minval=0, maxval=maxval, dtype=tf.int32)


def _frame_count(num_frames):
    """The frame count as an int32 scalar tensor, at least 1."""
    tf = _tf()
    return tf.maximum(tf.cast(num_frames, tf.int32), 1)


def _valid_start_count(num_frames, new_length: int):
    """Starts s with s + new_length - 1 <= num_frames - 1, at least 1: int32 scalar."""
    tf = _tf()
    return tf.maximum(_frame_count(num_frames) - (new_length - 1), 1)


def consecutive_indices(starts, new_length: int, num_frames):
    """starts int [...] -> int32 [..., new_length]: start, start + 1, ..., clamped to T - 1.

    The clamp only acts when the video has fewer than `new_length` frames (TSN repeats the
    last frame then).
    """
    tf = _tf()
    _require_positive("new_length", new_length)
    starts = tf.cast(starts, tf.int32)
    offsets = tf.range(new_length, dtype=tf.int32)  # [L]
    indices = starts[..., None] + offsets  # [...] -> [..., L]
    return tf.minimum(indices, _frame_count(num_frames) - 1)


def _segment_positions(num_starts, num_segments: int, fractions):
    """floor((k + fraction) * V / S) for k < S: int32 [..., S], clamped to segment k, V - 1.

    fractions: float64 [..., S] (or broadcastable to it) in [0, 1). Segment k is the real
    interval [k V / S, (k+1) V / S) of start positions; the frames it touches are
    floor(k V / S) .. ceil((k+1) V / S) - 1.
    """
    tf = _tf()
    segments = tf.range(num_segments, dtype=tf.int32)  # [S]
    count = tf.cast(num_starts, tf.float64)
    positions = (tf.cast(segments, tf.float64) + fractions) * count / num_segments
    starts = tf.cast(tf.floor(positions), tf.int32)
    lower = (segments * num_starts) // num_segments
    upper = ((segments + 1) * num_starts + num_segments - 1) // num_segments - 1
    starts = tf.clip_by_value(starts, lower, upper)
    return tf.minimum(starts, num_starts - 1)


def segment_starts(num_frames, num_segments: int, new_length: int = 1, training=False, seed=None):
    """TSN segment starts: int32 [num_segments].

    The V = num_frames - new_length + 1 valid starts are split into `num_segments` equal
    segments (real intervals of V / S starts). Training: a uniformly random start inside
    each segment; evaluation: the segment centre floor((k + 1/2) V / S) (TSN's test
    indices, so e.g. 12 frames, 4 segments -> 1, 4, 7, 10). Unlike TSN's integer
    segments of floor(V / S) frames, the last V mod S starts are reachable in training.

    Short videos (V < num_segments): segments are narrower than a frame, so consecutive
    segments share frames and indices repeat in temporal order (8 segments over 3 frames
    evaluate as 0 0 0 1 1 2 2 2), instead of TSN's all-zeros.
    """
    tf = _tf()
    _require_positive("num_segments", num_segments)
    _require_positive("new_length", new_length)
    num_starts = _valid_start_count(num_frames, new_length)
    if training:
        fractions = uniform_unit([num_segments], seed)  # [S] in [0, 1)
    else:
        fractions = tf.fill([num_segments], tf.constant(0.5, tf.float64))
    return _segment_positions(num_starts, num_segments, fractions)


def segment_indices(num_frames, num_segments: int, new_length: int = 1, training=False, seed=None):
    """TSN sampling: int32 [num_segments, new_length] frame indices.

    Starts from `segment_starts`, then the `new_length` consecutive frames from each start
    (all <= num_frames - 1). For flow pass num_frames = T - 1 (flow frames).
    """
    starts = segment_starts(num_frames, num_segments, new_length, training, seed)  # [S]
    return consecutive_indices(starts, new_length, num_frames)  # [S, L]


def _dense_positions(num_frames, num_segments: int, frame_interval: int):
    """Clip start positions P with start + (S - 1) * interval <= T - 1; at least 1."""
    tf = _tf()
    return tf.maximum(_frame_count(num_frames) - (num_segments - 1) * frame_interval, 1)


def _dense_clip(start, num_frames, num_segments: int, frame_interval: int):
    """(start + k * interval) mod T for k < S: int32 [..., S] from start int32 [...]."""
    tf = _tf()
    steps = tf.range(num_segments, dtype=tf.int32) * frame_interval  # [S]
    return tf.math.floormod(start[..., None] + steps, _frame_count(num_frames))


def dense_clip_indices(
    num_frames, num_segments: int, frame_interval: int, training=False, seed=None
):
    """TSM dense sampling: int32 [num_segments], one frame every `frame_interval`.

    The clip spans (S - 1) * interval + 1 frames; training starts it uniformly at random,
    evaluation centres it (start = (P - 1) // 2 with P = T - (S - 1) * interval possible
    starts). Videos shorter than the span wrap around (index mod T), as TSM does.
    """
    tf = _tf()
    _require_positive("num_segments", num_segments)
    _require_positive("frame_interval", frame_interval)
    positions = _dense_positions(num_frames, num_segments, frame_interval)
    start = uniform_integer(positions, seed) if training else (positions - 1) // 2
    return _dense_clip(tf.cast(start, tf.int32), num_frames, num_segments, frame_interval)


def test_clip_starts(
    num_frames,
    num_segments: int,
    num_clips: int,
    sampling: str = "tsn",
    new_length: int = 1,
    frame_interval: int = 2,
):
    """Multi-clip test sampling: int32 [num_clips, num_segments] starts.

    tsn: clip c takes position (c + 1/2) / C inside every segment, so the clips are evenly
    spaced and clip 0 of a single clip is the segment centre (= `segment_starts`
    evaluation). dense: C clips whose starts are evenly spaced over the possible starts
    (TSM's linspace); a single clip is centred (= `dense_clip_indices` evaluation).
    Starts leave room for `new_length` stacked frames (indices via `test_clip_indices`).
    """
    tf = _tf()
    _require_positive("num_segments", num_segments)
    _require_positive("num_clips", num_clips)
    _require_positive("new_length", new_length)
    _require_positive("frame_interval", frame_interval)
    if sampling not in SAMPLINGS:
        raise ConfigError(f"sampling={sampling!r} is not valid; choose one of: {SAMPLINGS}")
    num_starts = _valid_start_count(num_frames, new_length)
    clips = tf.range(num_clips, dtype=tf.float64)  # [C]
    if sampling == "tsn":
        fractions = ((clips + 0.5) / num_clips)[:, None]  # [C] -> [C, 1]
        return _segment_positions(num_starts, num_segments, fractions)  # [C, S]
    positions = _dense_positions(num_starts, num_segments, frame_interval)
    if num_clips == 1:
        starts = tf.reshape((positions - 1) // 2, [1])  # [C]
    else:
        last = tf.cast(positions - 1, tf.float64)
        starts = tf.cast(tf.floor(clips * last / (num_clips - 1)), tf.int32)  # [C]
    return _dense_clip(starts, num_starts, num_segments, frame_interval)  # [C, S]


def test_clip_indices(
    num_frames,
    num_segments: int,
    num_clips: int,
    sampling: str = "tsn",
    new_length: int = 1,
    frame_interval: int = 2,
):
    """Multi-clip test sampling: int32 [num_clips, num_segments, new_length] indices.

    `test_clip_starts` plus the `new_length` consecutive frames of each start.
    """
    starts = test_clip_starts(
        num_frames, num_segments, num_clips, sampling, new_length, frame_interval
    )  # [C, S]
    return consecutive_indices(starts, new_length, num_frames)  # [C, S, L]


# pytest would collect the two test_* functions from a test module that imports them by name.
test_clip_starts.__test__ = False
test_clip_indices.__test__ = False
