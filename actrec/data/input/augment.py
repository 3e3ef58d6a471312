"""Spatial augmentation and normalisation of clips: float32 [T, H, W, C] tensors.

One clip is T frames of one video (T = num_segments); every function applies the SAME
crop / flip to all T frames, as TSN's Group* transforms do. Channels:

    RGB   C = 3, values in [0, 255]
    flow  C = 2 L, the L stacked flow frames interleaved [x0, y0, x1, y1, ...] (TSN order),
          float values with 0 = no motion (dequantised pixels, or pixels / 20 once
          normalised); the quantised uint8 form must be dequantised first
          (`shards.dequantize_flow_tensor`).

Mirroring flow also reverses its horizontal motion: `horizontal_flip(..., is_flow=True)`
negates the x channels (x -> -x), the float equivalent of TSN's 255 - q inversion of the
x images. Crops resize flow like an image (TSN): flow magnitudes are not rescaled.

Randomness follows `actrec.data.input.sampling`: seed None uses the global generator, an int or a
shape-[2] seed uses stateless ops (same seed, same crop and flip).
"""

from __future__ import annotations

from actrec.data.format.flow import FLOW_BOUND
from actrec.data.input.sampling import split_seed, uniform_integer, uniform_unit
from actrec.errors import ConfigError

MULTI_SCALES = (1.0, 0.875, 0.75, 0.66)
NORMALIZATIONS = ("none", "imagenet", "minus_one_one")
IMAGENET_MEAN = (0.485, 0.456, 0.406)  # of pixels / 255
IMAGENET_STD = (0.229, 0.224, 0.225)
# A multi-scale crop side within this many pixels of crop_size is taken as crop_size (TSN).
SNAP_PIXELS = 3
# Fixed crop positions as (row, column) multiples of a quarter step of the free space,
# step = (H - h) // 4 and (W - w) // 4: the 4 corners and the centre, then TSN's "more fixed
# crops": edge centres and quarter points, in the sources' order (yjxiong/tsn-pytorch
# transforms.py `fill_fix_offset` lines 180-203; yjxiong/caffe src/caffe/data_transformer.cpp
# `fillFixOffset` lines 50-74; temporal-shift-module ops/transforms.py lines 228-251).
FIVE_POSITIONS = ((0, 0), (0, 4), (4, 0), (4, 4), (2, 2))
MORE_POSITIONS = ((2, 0), (2, 4), (4, 2), (0, 2), (1, 1), (1, 3), (3, 1), (3, 3))


def _tf():
    import tensorflow as tf

    return tf


def _require_crop_size(crop_size: int) -> None:
    if not isinstance(crop_size, int) or crop_size < 1:
        raise ConfigError(f"crop_size={crop_size!r} is not valid; use a whole number >= 1")


def default_scale_size(crop_size: int) -> int:
    """The short side evaluation resizes to before a centre crop: crop_size * 256 / 224."""
    _require_crop_size(crop_size)
    return round(crop_size * 256 / 224)


# --- boxes ------------------------------------------------------------------------------


def multi_scale_crop_sizes(height, width, crop_size: int, scales=MULTI_SCALES):
    """Candidate crop sides: int32 [len(scales)], floor(min(H, W) * scale).

    A side within SNAP_PIXELS of crop_size becomes crop_size (TSN); none exceeds min(H, W).
    """
    tf = _tf()
    _require_crop_size(crop_size)
    base = tf.minimum(tf.cast(height, tf.int32), tf.cast(width, tf.int32))
    scales = tf.constant(scales, tf.float64)
    sizes = tf.cast(tf.floor(tf.cast(base, tf.float64) * scales), tf.int32)  # [N]
    sizes = tf.where(tf.abs(sizes - crop_size) < SNAP_PIXELS, crop_size, sizes)
    return tf.clip_by_value(sizes, 1, base)


def fixed_crop_offsets(height, width, crop_height, crop_width, more_fixed_crops: bool = False):
    """(top, left) of the fixed crop positions: int32 [5, 2] (or [13, 2] with TSN's
    more_fix_crop), exactly TSN's: with steps (H - h) // 4 and (W - w) // 4, position
    (row, column) of FIVE_POSITIONS (+ MORE_POSITIONS) is (row * step_h, column * step_w).

    Order: top-left, top-right, bottom-left, bottom-right, centre, then centre-left,
    centre-right, bottom-centre, top-centre and the four quarter points. When the free space
    is not a multiple of 4 the "far" corners stop short of the edge by its remainder, as in
    the sources (`evaluation_crop_offsets` has the exact corners of test-time cropping).
    """
    tf = _tf()
    positions = FIVE_POSITIONS + (MORE_POSITIONS if more_fixed_crops else ())
    multiples = tf.constant(positions, tf.int32)  # [K, 2] (row, column) step multiples
    steps = tf.stack(
        [
            (tf.cast(height, tf.int32) - crop_height) // 4,
            (tf.cast(width, tf.int32) - crop_width) // 4,
        ]
    )  # [2]
    return multiples * steps[None, :]  # [K, 2]


def evaluation_crop_offsets(height, width, crop_height, crop_width):
    """(top, left) of the 5 test-time crops: int32 [5, 2], corners exact (H - h, W - w) and
    the centre ((H - h) // 2, (W - w) // 2), as TSN's published 10-crop testing takes them
    (yjxiong/caffe python/caffe/io.py `oversample` lines 355-367; temporal-segment-networks
    pyActionRecog/utils/io.py `flow_stack_oversample` lines 16-30). Order as
    `fixed_crop_offsets`."""
    tf = _tf()
    quarters = tf.constant(FIVE_POSITIONS, tf.int32)  # [5, 2] (row, column) quarters
    free_space = tf.stack(
        [tf.cast(height, tf.int32) - crop_height, tf.cast(width, tf.int32) - crop_width]
    )  # [2]
    return quarters * free_space[None, :] // 4  # [5, 2]


def multi_scale_crop_box(
    height,
    width,
    crop_size: int,
    seed=None,
    scales=MULTI_SCALES,
    max_distort: int = 1,
    fixed_crop: bool = True,
    more_fixed_crops: bool = False,
):
    """TSN multi-scale crop: int32 [4] box (top, left, crop_height, crop_width).

    crop_height and crop_width are picked from `multi_scale_crop_sizes` with scale indices
    i, j such that |i - j| <= max_distort (so the aspect ratio changes a little); the
    position is one of the 5 (or 13) `fixed_crop_offsets` with fixed_crop (TSN's default),
    else uniform over the frame.
    """
    tf = _tf()
    if not isinstance(max_distort, int) or max_distort < 0:
        raise ConfigError(f"max_distort={max_distort!r} is not valid; use a whole number >= 0")
    if not scales or any(not 0 < scale <= 1 for scale in scales):
        raise ConfigError(f"scales={scales!r} is not valid; use values in (0, 1]")
    sizes = multi_scale_crop_sizes(height, width, crop_size, scales)  # [N]
    pairs = [
        (row, column)
        for row in range(len(scales))
        for column in range(len(scales))
        if abs(row - column) <= max_distort
    ]
    pair_seed, row_seed, column_seed = split_seed(seed, 3)
    chosen = tf.gather(tf.constant(pairs, tf.int32), uniform_integer(len(pairs), pair_seed))
    crop_height, crop_width = sizes[chosen[0]], sizes[chosen[1]]
    height, width = tf.cast(height, tf.int32), tf.cast(width, tf.int32)
    if fixed_crop:
        offsets = fixed_crop_offsets(height, width, crop_height, crop_width, more_fixed_crops)
        top_left = tf.gather(offsets, uniform_integer(tf.shape(offsets)[0], row_seed))
        top, left = top_left[0], top_left[1]
    else:
        top = uniform_integer(height - crop_height + 1, row_seed)
        left = uniform_integer(width - crop_width + 1, column_seed)
    return tf.stack([top, left, crop_height, crop_width])


def five_crop_boxes(height, width, crop_size: int):
    """int32 [5, 4] boxes (top, left, crop_size, crop_size): top-left, top-right,
    bottom-left, bottom-right, centre (TSN's oversampling positions, exact corners)."""
    tf = _tf()
    _require_crop_size(crop_size)
    offsets = evaluation_crop_offsets(height, width, crop_size, crop_size)  # [5, 2]
    sizes = tf.fill([5, 2], tf.constant(crop_size, tf.int32))  # [5, 2]
    return tf.concat([offsets, sizes], axis=1)  # [5, 4]


def ten_crop_boxes(height, width, crop_size: int):
    """The 10-crop protocol: (boxes int32 [10, 4], mirrored bool [10]).

    Views 0-4 are `five_crop_boxes`, views 5-9 the same boxes mirrored.
    """
    tf = _tf()
    boxes = five_crop_boxes(height, width, crop_size)  # [5, 4]
    mirrored = tf.constant([False] * 5 + [True] * 5)
    return tf.concat([boxes, boxes], axis=0), mirrored  # [10, 4], [10]


# --- geometry ------------------------------------------------------------------------------


def crop_clip(clip, box):
    """[T, H, W, C] -> [T, h, w, C] for box (top, left, h, w), the same for every frame."""
    tf = _tf()
    box = tf.cast(box, tf.int32)
    return clip[:, box[0] : box[0] + box[2], box[1] : box[1] + box[3], :]


def resize_clip(clip, height, width):
    """Bilinear resize of every frame: [T, H, W, C] -> float32 [T, height, width, C]."""
    tf = _tf()
    return tf.image.resize(tf.cast(clip, tf.float32), tf.stack([height, width]))


def resize_short_side(clip, short_side: int):
    """[T, H, W, C] -> float32 [T, H', W', C] with min(H', W') = short_side (aspect kept)."""
    tf = _tf()
    _require_crop_size(short_side)
    shape = tf.shape(clip)
    height, width = tf.cast(shape[1], tf.float64), tf.cast(shape[2], tf.float64)
    ratio = short_side / tf.minimum(height, width)
    new_height = tf.maximum(tf.cast(tf.round(height * ratio), tf.int32), short_side)
    new_width = tf.maximum(tf.cast(tf.round(width * ratio), tf.int32), short_side)
    return resize_clip(clip, new_height, new_width)


def multi_scale_crop(
    clip,
    crop_size: int,
    seed=None,
    scales=MULTI_SCALES,
    max_distort: int = 1,
    fixed_crop: bool = True,
    more_fixed_crops: bool = False,
):
    """Training crop: [T, H, W, C] -> float32 [T, crop_size, crop_size, C].

    `multi_scale_crop_box` (one box for the whole clip), then a resize to crop_size.
    """
    tf = _tf()
    shape = tf.shape(clip)
    box = multi_scale_crop_box(
        shape[1], shape[2], crop_size, seed, scales, max_distort, fixed_crop, more_fixed_crops
    )
    return resize_clip(crop_clip(clip, box), crop_size, crop_size)


def centre_crop(clip, crop_size: int, scale_size: int | None = None):
    """Evaluation crop: resize the short side to scale_size, take the centre square.

    [T, H, W, C] -> float32 [T, crop_size, crop_size, C]; scale_size defaults to
    `default_scale_size(crop_size)` (256 for 224).
    """
    tf = _tf()
    scale_size = default_scale_size(crop_size) if scale_size is None else scale_size
    if scale_size < crop_size:
        raise ConfigError(
            f"scale_size={scale_size} is smaller than crop_size={crop_size}; use a scale_size "
            f">= crop_size (default crop_size * 256 / 224 = {default_scale_size(crop_size)})"
        )
    resized = resize_short_side(clip, scale_size)
    shape = tf.shape(resized)
    box = five_crop_boxes(shape[1], shape[2], crop_size)[4]  # the centre
    cropped = crop_clip(resized, box)
    return tf.ensure_shape(cropped, [None, crop_size, crop_size, None])


def five_crops(clip, crop_size: int, scale_size: int | None = None):
    """The 4 corners and the centre: [T, H, W, C] -> float32 [5, T, crop, crop, C].

    With scale_size, the short side is first resized to it (TSN resizes to 256 first);
    without, crops are taken from the clip as given. Order as `five_crop_boxes`.
    """
    tf = _tf()
    clip = tf.cast(clip, tf.float32)
    if scale_size is not None:
        clip = resize_short_side(clip, scale_size)
    shape = tf.shape(clip)
    boxes = five_crop_boxes(shape[1], shape[2], crop_size)  # [5, 4]
    views = [crop_clip(clip, boxes[index]) for index in range(5)]
    return tf.ensure_shape(tf.stack(views), [5, None, crop_size, crop_size, None])


def ten_crops(clip, crop_size: int, is_flow: bool = False, scale_size: int | None = None):
    """`five_crops` then their mirrors (flow-aware): float32 [10, T, crop, crop, C]."""
    tf = _tf()
    views = five_crops(clip, crop_size, scale_size)  # [5, T, crop, crop, C]
    mirrors = tf.map_fn(lambda view: horizontal_flip(view, is_flow), views)
    return tf.concat([views, mirrors], axis=0)  # [10, T, crop, crop, C]


def three_crops(clip, crop_size: int):
    """TSM's full-resolution three crops, at the model's input size: the short side resized
    to crop_size, then three crop_size squares along the long side (start, centre, end:
    left / centre / right of a landscape frame, top / centre / bottom of a portrait one).

    [T, H, W, C] -> float32 [3, T, crop_size, crop_size, C]. (TSM feeds 256-pixel crops to a
    fully convolutional network; a Keras model has a fixed input size, so the crops cover the
    whole short side at crop_size instead.)
    """
    tf = _tf()
    resized = resize_short_side(clip, crop_size)  # [T, H', W', C], min(H', W') = crop_size
    shape = tf.shape(resized)
    height, width = shape[1], shape[2]
    free_rows, free_columns = height - crop_size, width - crop_size
    fractions = tf.constant([0, 1, 2], tf.int32)  # start, centre, end (halves of the free space)
    tops = (free_rows * fractions) // 2
    lefts = (free_columns * fractions) // 2
    views = [
        resized[:, tops[index] : tops[index] + crop_size, lefts[index] : lefts[index] + crop_size]
        for index in range(3)
    ]
    return tf.ensure_shape(tf.stack(views), [3, None, crop_size, crop_size, None])


# --- flip and normalisation ------------------------------------------------------------------


def horizontal_flip(clip, is_flow: bool = False):
    """Mirror every frame left-right: [T, H, W, C] -> [T, H, W, C].

    is_flow: C = 2 L interleaved [x0, y0, x1, y1, ...] float flow with 0 = no motion; the x
    channels (even indices) are also negated, since mirrored motion to the right is motion
    to the left. y is unchanged.
    """
    tf = _tf()
    mirrored = tf.reverse(clip, axis=[2])
    if not is_flow:
        return mirrored
    channels = tf.range(tf.shape(clip)[-1])
    signs = tf.where(channels % 2 == 0, -1.0, 1.0)  # [C]: -1 on x, +1 on y
    return mirrored * tf.cast(signs, mirrored.dtype)


def random_horizontal_flip(clip, is_flow: bool = False, seed=None, probability: float = 0.5):
    """`horizontal_flip` with the given probability (one draw for the whole clip)."""
    tf = _tf()
    if not 0.0 <= probability <= 1.0:
        raise ConfigError(f"flip probability={probability!r} is not valid; use a value in [0, 1]")
    flip = uniform_unit([], seed) < probability
    return tf.cond(flip, lambda: horizontal_flip(clip, is_flow), lambda: tf.identity(clip))


def normalize_rgb(clip, normalization: str = "none"):
    """RGB [0, 255] -> float32 of the same shape.

    "none": kept in [0, 255] (the backbone's own preprocessing is applied by the model);
    "imagenet": (x / 255 - mean) / std with the ImageNet mean and std;
    "minus_one_one": x / 127.5 - 1, in [-1, 1].
    """
    tf = _tf()
    clip = tf.cast(clip, tf.float32)
    if normalization == "none":
        return clip
    if normalization == "imagenet":
        mean = tf.constant(IMAGENET_MEAN, tf.float32)
        std = tf.constant(IMAGENET_STD, tf.float32)
        return (clip / 255.0 - mean) / std
    if normalization == "minus_one_one":
        return clip / 127.5 - 1.0
    raise ConfigError(
        f"normalization={normalization!r} is not valid; choose one of: {', '.join(NORMALIZATIONS)}"
    )


def flow_to_stored_scale(flow_pixels, bound: float = FLOW_BOUND):
    """Dequantised flow in pixels -> float32 in [0, 255] with 127.5 = no motion.

    The scale flow is stored at (docs/architecture.md §2) without the rounding, which the models'
    own preprocessing (actrec.models.preprocessing) expects; a flip's x -> -x in pixels
    is 255 - q on this scale.
    """
    tf = _tf()
    scaled = tf.cast(flow_pixels, tf.float32) * (255.0 / (2.0 * bound)) + 127.5
    return tf.clip_by_value(scaled, 0.0, 255.0)


def normalize_flow(flow_pixels, bound: float = FLOW_BOUND):
    """Dequantised flow in pixels -> float32 in [-1, 1]: clip(pixels / bound, -1, 1)."""
    tf = _tf()
    return tf.clip_by_value(tf.cast(flow_pixels, tf.float32) / bound, -1.0, 1.0)
