"""Clip augmentation: multi-scale / corner crops, 5 and 10 crops, flow-aware flip, norms."""

from __future__ import annotations

import numpy as np
import pytest

from actrec.data.input import augment
from actrec.errors import ConfigError

tf = pytest.importorskip("tensorflow")


def _crafted_flow(num_frames: int = 2, height: int = 3, width: int = 4, channels: int = 4):
    """float32 [T, H, W, C] with every value distinct and non-zero."""
    size = num_frames * height * width * channels
    return np.arange(1, size + 1, dtype=np.float32).reshape(num_frames, height, width, channels)


def test_flow_flip_mirrors_and_negates_x_exactly():
    clip = _crafted_flow()
    flipped = augment.horizontal_flip(tf.constant(clip), is_flow=True).numpy()
    for column in range(clip.shape[2]):
        source = clip[:, :, clip.shape[2] - 1 - column, :]
        assert np.array_equal(flipped[:, :, column, 0::2], -source[..., 0::2])  # x0, x1
        assert np.array_equal(flipped[:, :, column, 1::2], source[..., 1::2])  # y0, y1
    twice = augment.horizontal_flip(tf.constant(flipped), is_flow=True).numpy()
    assert np.array_equal(twice, clip)


def test_rgb_flip_only_mirrors():
    clip = _crafted_flow(channels=3)
    flipped = augment.horizontal_flip(tf.constant(clip)).numpy()
    assert np.array_equal(flipped, clip[:, :, ::-1, :])


def test_random_flip_follows_seed_and_probability():
    clip = tf.constant(_crafted_flow())
    mirrored = augment.horizontal_flip(clip, is_flow=True).numpy()
    outcomes = []
    for seed in range(16):
        result = augment.random_horizontal_flip(clip, True, seed=seed).numpy()
        again = augment.random_horizontal_flip(clip, True, seed=seed).numpy()
        assert np.array_equal(result, again)
        assert np.array_equal(result, mirrored) or np.array_equal(result, clip.numpy())
        outcomes.append(np.array_equal(result, mirrored))
    assert 0 < sum(outcomes) < len(outcomes)
    assert np.array_equal(augment.random_horizontal_flip(clip, True, 1, 0.0), clip)
    assert np.array_equal(augment.random_horizontal_flip(clip, True, 1, 1.0), mirrored)


def test_multi_scale_sizes_snap_to_the_crop_size():
    assert augment.multi_scale_crop_sizes(48, 64, 32).numpy().tolist() == [48, 42, 36, 32]
    assert augment.multi_scale_crop_sizes(256, 340, 224).numpy().tolist() == [256, 224, 192, 168]


@pytest.mark.parametrize("fixed_crop", [True, False])
def test_multi_scale_boxes_respect_sizes_distortion_and_positions(fixed_crop):
    height, width, crop_size = 48, 64, 32
    sizes = [48, 42, 36, 32]
    positions, pairs = set(), set()
    for seed in range(80):
        top, left, crop_height, crop_width = augment.multi_scale_crop_box(
            height, width, crop_size, seed=seed, fixed_crop=fixed_crop
        ).numpy()
        row, column = sizes.index(crop_height), sizes.index(crop_width)
        assert abs(row - column) <= 1
        assert 0 <= top <= height - crop_height and 0 <= left <= width - crop_width
        if fixed_crop:  # TSN's steps: a quarter of the free space, rounded down
            step_height, step_width = (height - crop_height) // 4, (width - crop_width) // 4
            allowed = {
                (0, 0): "top-left",
                (0, 4 * step_width): "top-right",
                (4 * step_height, 0): "bottom-left",
                (4 * step_height, 4 * step_width): "bottom-right",
                (2 * step_height, 2 * step_width): "centre",
            }
            assert (top, left) in allowed
            positions.add(allowed[(top, left)])
        else:
            positions.add((int(top), int(left)))
        pairs.add((row, column))
    assert len(pairs) == 10  # every (i, j) with |i - j| <= 1 of 4 scales is drawn
    assert len(positions) == 5 if fixed_crop else len(positions) > 20


# TSN's fill_fix_offset(more_fix_crop=True, W, H, w, h) as (w_offset, h_offset), computed by
# hand from yjxiong/tsn-pytorch transforms.py lines 180-203: w_step = (W - w) // 4, h_step =
# (H - h) // 4; corners, centre, centre-left, centre-right, bottom-centre, top-centre, quarters.
TSN_MORE_FIX_CROP = {
    # W=340, H=256, 224 x 224: w_step 29, h_step 8
    (340, 256, 224, 224): [
        (0, 0), (116, 0), (0, 32), (116, 32), (58, 16),
        (0, 16), (116, 16), (58, 32), (58, 0),
        (29, 8), (87, 8), (29, 24), (87, 24),
    ],
    # W=128, H=96, w=63, h=70: free 65 x 26 -> w_step 16, h_step 6 (not exact corners)
    (128, 96, 63, 70): [
        (0, 0), (64, 0), (0, 24), (64, 24), (32, 12),
        (0, 12), (64, 12), (32, 24), (32, 0),
        (16, 6), (48, 6), (16, 18), (48, 18),
    ],
}  # fmt: skip


@pytest.mark.parametrize("geometry", list(TSN_MORE_FIX_CROP))
def test_the_13_crop_positions_are_tsns_fill_fix_offset(geometry):
    width, height, crop_width, crop_height = geometry
    offsets = augment.fixed_crop_offsets(height, width, crop_height, crop_width, True).numpy()
    expected = TSN_MORE_FIX_CROP[geometry]
    assert [(int(left), int(top)) for top, left in offsets] == expected
    five = augment.fixed_crop_offsets(height, width, crop_height, crop_width, False).numpy()
    assert [(int(left), int(top)) for top, left in five] == expected[:5]


def test_more_fixed_crops_draws_all_13_positions():
    drawn = {
        tuple(box[:2])
        for seed in range(300)
        for box in [
            augment.multi_scale_crop_box(
                96, 128, 32, seed=seed, scales=(0.75,), more_fixed_crops=True
            ).numpy()
        ]
    }
    expected = augment.fixed_crop_offsets(96, 128, 72, 72, True).numpy()
    assert drawn == {tuple(offset) for offset in expected}
    assert len(drawn) == 13


def test_multi_scale_crop_applies_one_box_to_every_frame():
    rng = np.random.default_rng(0)
    image = rng.uniform(0, 200, (48, 64, 3)).astype(np.float32)
    clip = np.stack([image + 10.0 * frame for frame in range(4)])  # [4, 48, 64, 3]
    for seed in range(5):
        out = augment.multi_scale_crop(tf.constant(clip), 32, seed=seed).numpy()
        assert out.shape == (4, 32, 32, 3)
        for frame in range(4):
            np.testing.assert_allclose(out[frame] - out[0], 10.0 * frame, atol=1e-3)


def test_full_size_crop_is_the_clip_itself():
    clip = _crafted_flow(num_frames=2, height=32, width=32, channels=2)
    out = augment.multi_scale_crop(tf.constant(clip), 32, seed=3, scales=(1.0,)).numpy()
    assert np.array_equal(out, clip)


def _regions_image(size: int = 12, crop: int = 4) -> np.ndarray:
    """[1, 12, 12, 1]: corner and centre 4x4 regions hold 10 * region + column offset."""
    image = np.zeros((size, size), np.float32)
    far = size - crop
    middle = far // 2
    for value, (top, left) in enumerate(
        [(0, 0), (0, far), (far, 0), (far, far), (middle, middle)], start=1
    ):
        image[top : top + crop, left : left + crop] = 10 * value + np.arange(crop)[None, :]
    return image[None, :, :, None]


def test_five_crops_are_the_corners_and_the_centre():
    assert augment.five_crop_boxes(48, 64, 32).numpy()[:, :2].tolist() == [
        [0, 0],
        [0, 32],
        [16, 0],
        [16, 32],
        [8, 16],
    ]
    views = augment.five_crops(tf.constant(_regions_image()), 4).numpy()
    assert views.shape == (5, 1, 4, 4, 1)
    for index in range(5):
        expected = 10 * (index + 1) + np.arange(4)
        assert np.array_equal(views[index, 0, :, :, 0], np.tile(expected, (4, 1))), index


def test_ten_crops_add_the_mirrors_and_negate_flow_x():
    rgb = augment.ten_crops(tf.constant(_regions_image()), 4).numpy()
    assert rgb.shape == (10, 1, 4, 4, 1)
    for index in range(5):
        assert np.array_equal(rgb[index + 5], rgb[index][:, :, ::-1, :])
    region = _regions_image()
    flow = np.concatenate([region, region + 100], axis=-1)  # x, y
    views = augment.ten_crops(tf.constant(flow), 4, is_flow=True).numpy()
    for index in range(5):
        assert np.array_equal(views[index + 5, ..., 0], -views[index, :, :, ::-1, 0])
        assert np.array_equal(views[index + 5, ..., 1], views[index, :, :, ::-1, 1])
    boxes, mirrored = augment.ten_crop_boxes(12, 12, 4)
    assert boxes.shape == (10, 4) and mirrored.numpy().tolist() == [False] * 5 + [True] * 5


def test_centre_crop_resizes_the_short_side_then_takes_the_centre():
    assert augment.default_scale_size(224) == 256
    clip = _crafted_flow(num_frames=2, height=48, width=64, channels=3)
    out = augment.centre_crop(tf.constant(clip), 32, scale_size=48).numpy()
    assert np.array_equal(out, clip[:, 8:40, 16:48, :])  # short side already 48
    resized = augment.centre_crop(tf.constant(clip), 16, scale_size=24).numpy()
    assert resized.shape == (2, 16, 16, 3)
    with pytest.raises(ConfigError, match="scale_size=20"):
        augment.centre_crop(tf.constant(clip), 32, scale_size=20)


def test_normalisations():
    pixels = tf.constant([[[[0.0, 127.5, 255.0]]]])  # [1, 1, 1, 3]
    assert np.array_equal(augment.normalize_rgb(pixels).numpy(), pixels.numpy())
    np.testing.assert_allclose(
        augment.normalize_rgb(pixels, "minus_one_one").numpy().ravel(), [-1, 0, 1]
    )
    mean = tf.constant(255 * np.array(augment.IMAGENET_MEAN, np.float32))[None, None, None, :]
    np.testing.assert_allclose(augment.normalize_rgb(mean, "imagenet").numpy(), 0, atol=1e-5)
    with pytest.raises(ConfigError, match="normalization='caffe'"):
        augment.normalize_rgb(pixels, "caffe")
    flow = augment.normalize_flow(tf.constant([-20.0, -10.0, 0.0, 20.0, 35.0])).numpy()
    np.testing.assert_allclose(flow, [-1, -0.5, 0, 1, 1])
