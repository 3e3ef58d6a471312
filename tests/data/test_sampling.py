"""Frame-index sampling: TSN segments, TSM dense clips, multi-clip test views."""

from __future__ import annotations

import math

import numpy as np
import pytest

from actrec.data.input import sampling
from actrec.errors import ConfigError

tf = pytest.importorskip("tensorflow")


def _segment_bounds(num_starts: int, num_segments: int, segment: int) -> tuple[int, int]:
    """First and last start touched by segment `segment` of the real interval split."""
    low = segment * num_starts / num_segments
    high = (segment + 1) * num_starts / num_segments
    return math.floor(low), math.ceil(high) - 1


def test_eval_indices_are_segment_centres():
    assert sampling.segment_indices(12, 4).numpy().tolist() == [[1], [4], [7], [10]]
    assert sampling.segment_indices(10, 3).numpy().ravel().tolist() == [1, 5, 8]
    # TSN's test formula int(tick / 2 + tick * k), tick = V / S
    tick = 250 / 25
    expected = [int(tick / 2 + tick * k) for k in range(25)]
    assert sampling.segment_indices(250, 25).numpy().ravel().tolist() == expected


def test_eval_flow_stacks_start_at_centres_of_the_valid_starts():
    # 12 RGB frames -> 11 flow frames; L = 5 leaves 7 valid starts: centres 1, 3, 5
    indices = sampling.segment_indices(11, 3, new_length=5).numpy()
    assert indices.tolist() == [[1, 2, 3, 4, 5], [3, 4, 5, 6, 7], [5, 6, 7, 8, 9]]


@pytest.mark.parametrize(("num_frames", "new_length"), [(12, 1), (37, 1), (100, 5), (9, 5)])
def test_training_starts_lie_inside_their_segment_and_follow_the_seed(num_frames, new_length):
    num_segments = 8
    num_starts = num_frames - new_length + 1
    draws = []
    for seed in range(20):
        indices = sampling.segment_indices(
            num_frames, num_segments, new_length, training=True, seed=seed
        ).numpy()
        assert indices.shape == (num_segments, new_length)
        starts = indices[:, 0]
        for segment, start in enumerate(starts):
            low, high = _segment_bounds(num_starts, num_segments, segment)
            assert low <= start <= high, (seed, segment, start, low, high)
        assert np.all(np.diff(starts) >= 0)
        assert np.all(indices == starts[:, None] + np.arange(new_length))
        again = sampling.segment_indices(num_frames, num_segments, new_length, True, seed)
        assert np.array_equal(again.numpy(), indices)
        draws.append(tuple(starts))
    assert len(set(draws)) > 10  # the seed changes the draw


def test_training_reaches_every_valid_start():
    # 12 frames, 5 segments: TSN's integer segments (2 frames each) never reach 10 and 11
    reached = set()
    for seed in range(60):
        reached |= set(sampling.segment_indices(12, 5, training=True, seed=seed).numpy().ravel())
    assert reached == set(range(12))


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("new_length", [1, 5])
def test_flow_indices_never_pass_the_last_flow_frame(training, new_length):
    for num_rgb_frames in range(2, 40):
        num_flow_frames = num_rgb_frames - 1
        indices = sampling.segment_indices(
            num_flow_frames, 8, new_length, training=training, seed=num_rgb_frames
        ).numpy()
        assert indices.shape == (8, new_length)
        assert indices.min() >= 0 and indices.max() <= num_rgb_frames - 2, (num_rgb_frames, indices)


def test_short_videos_repeat_frames_in_order():
    assert sampling.segment_indices(3, 8).numpy().ravel().tolist() == [0, 0, 0, 1, 1, 2, 2, 2]
    for seed in range(10):
        starts = sampling.segment_indices(3, 8, training=True, seed=seed).numpy().ravel()
        assert starts.min() >= 0 and starts.max() <= 2 and np.all(np.diff(starts) >= 0)
    # fewer frames than new_length: the stack repeats the last frame
    assert sampling.segment_indices(2, 1, new_length=4).numpy().tolist() == [[0, 1, 1, 1]]


def test_dense_clip_is_centred_for_eval_and_random_for_training():
    # 20 frames, 4 x every 2: 14 possible starts, centred start 6
    assert sampling.dense_clip_indices(20, 4, 2).numpy().tolist() == [6, 8, 10, 12]
    starts = set()
    for seed in range(30):
        clip = sampling.dense_clip_indices(20, 4, 2, training=True, seed=seed).numpy()
        assert np.all(np.diff(clip) == 2) and 0 <= clip[0] <= 13
        starts.add(int(clip[0]))
    assert len(starts) > 5


def test_dense_clip_wraps_short_videos():
    assert sampling.dense_clip_indices(5, 4, 2).numpy().tolist() == [0, 2, 4, 1]
    clip = sampling.dense_clip_indices(5, 4, 2, training=True, seed=1).numpy()
    assert clip.tolist() == [0, 2, 4, 1]


def test_test_clips_are_evenly_spaced_and_one_clip_is_the_eval_view():
    assert sampling.test_clip_starts(12, 4, 2).numpy().tolist() == [[0, 3, 6, 9], [2, 5, 8, 11]]
    single = sampling.test_clip_starts(37, 8, 1).numpy()
    assert np.array_equal(single[0], sampling.segment_starts(37, 8).numpy())
    dense = sampling.test_clip_starts(30, 4, 3, sampling="dense", frame_interval=3).numpy()
    # 30 - 9 = 21 possible starts: linspace(0, 20, 3) = 0, 10, 20
    assert dense[:, 0].tolist() == [0, 10, 20] and np.all(np.diff(dense, axis=1) == 3)
    one_dense = sampling.test_clip_starts(20, 4, 1, sampling="dense").numpy()
    assert np.array_equal(one_dense[0], sampling.dense_clip_indices(20, 4, 2).numpy())


def test_test_clip_indices_stack_flow_inside_the_video():
    indices = sampling.test_clip_indices(11, 8, 10, new_length=5).numpy()
    assert indices.shape == (10, 8, 5)
    assert indices.min() >= 0 and indices.max() <= 10
    dense = sampling.test_clip_indices(11, 4, 2, sampling="dense", new_length=5).numpy()
    assert dense.shape == (2, 4, 5) and dense.max() <= 10


def test_sampling_runs_inside_tf_data_with_tensor_frame_counts():
    counts = tf.data.Dataset.from_tensor_slices(tf.constant([12, 40], tf.int64))
    seeded = counts.map(lambda count: sampling.segment_indices(count, 4, 1, True, seed=[5, 6]))
    first, second = list(seeded.as_numpy_iterator()), list(seeded.as_numpy_iterator())
    assert all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))
    assert first[0].max() <= 11 and first[1].max() <= 39


def test_invalid_counts_are_config_errors():
    with pytest.raises(ConfigError, match="num_segments=0"):
        sampling.segment_indices(10, 0)
    with pytest.raises(ConfigError, match="sampling='uniform'"):
        sampling.test_clip_starts(10, 2, 1, sampling="uniform")
