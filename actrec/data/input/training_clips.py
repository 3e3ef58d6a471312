"""One training example's clip: the records read, only the crop box decoded, then flip,
resize and scale (the order of the work is chosen for CPU cost; the result is the same clip
as cropping, resizing and flipping the decoded frames in float):

    header (one read) -> TSN / dense starts -> one read per start (RGB: 1 record, flow: the
      L consecutive records) -> the multi-scale crop box, from the header's frame size
      -> tf.io.decode_and_crop_jpeg: only around the box is decoded, uint8 (`training_crops`)
      -> `finish_example`: the crops, flip (uint8, before the resize: bilinear resizing
         commutes with a mirror), one cast, one resize to crop_size (none when the box
         already is crop_size), flow x -> 255 - x when mirrored, normalisation
         -> float32 [S, crop, crop, C]

The finishing can also run after batching, on the accelerator (`finish_batch`): the CPU
then stops at decoded uint8 parts, which is the JPEG decoding and one copy into the batch.
"""

from __future__ import annotations

from actrec.data.input import augment, sampling
from actrec.data.input.clip_reading import clip_jpegs, clip_starts

CHROMA_MARGIN = 8  # pixels; 2 make a 4:2:0 box exact, 8 cover 4:1:1 too


def _tf():
    import tensorflow as tf

    return tf


def _decoded_window(box, height, width):
    """The window decode_and_crop_jpeg decodes for `box` (top, left, h, w) of an RGB frame of
    height x width, and where the box lies in it: (window [4], inner top, inner left).

    JPEG colour is stored with subsampled chroma; a decoder interpolates each pixel's chroma
    from its neighbours, and a box decoded alone has none beyond its edges, so its edge
    pixels differ from the whole frame's (by up to 13 levels, measured). A margin of
    CHROMA_MARGIN pixels around the box makes them exact.
    """
    tf = _tf()
    height, width = tf.cast(height, tf.int32), tf.cast(width, tf.int32)
    top = tf.maximum(box[0] - CHROMA_MARGIN, 0)
    left = tf.maximum(box[1] - CHROMA_MARGIN, 0)
    bottom = tf.minimum(box[0] + box[2] + CHROMA_MARGIN, height)
    right = tf.minimum(box[1] + box[3] + CHROMA_MARGIN, width)
    window = tf.stack([top, left, bottom - top, right - left])
    return window, box[0] - top, box[1] - left


def decoded_parts(jpegs, box, spec, frame_size) -> tuple[list, object]:
    """Decode only around `box` (top, left, h, w): (parts, where the box lies in each part:
    int32 [2] (top, left)). RGB: S windows uint8 [h', w', 3] (the box plus a margin, see
    `_decoded_window`); flow: 2 S L crops uint8 [h, w], x0, y0, x1, y1, ... (greyscale: no
    chroma, no margin). frame_size: (height, width). The parts stay separate: stacking and
    cutting them are copies that `crops_of_parts` makes where the clip is finished."""
    tf = _tf()
    if spec.modality == "rgb":
        window, top, left = _decoded_window(box, *frame_size)
        parts = [
            tf.io.decode_and_crop_jpeg(jpegs[index], window, channels=3)
            for index in range(spec.num_segments)
        ]
        return parts, tf.stack([top, left])
    flow_x, flow_y = jpegs
    parts = [
        tf.io.decode_and_crop_jpeg(field[index], box, channels=1)[..., 0]
        for index in range(spec.num_segments * spec.new_length)
        for field in (flow_x, flow_y)
    ]
    return parts, tf.zeros([2], tf.int32)


def crops_of_parts(parts, geometry, spec):
    """The crops of `decoded_parts` (stacked: RGB [S, h', w', 3], flow [2SL, h', w'],
    h' >= h, w' >= w) and geometry int32 [5] (top, left, h, w, mirrored): uint8 RGB
    [S, h, w, 3] or flow planar [S, 2L, h, w]."""
    tf = _tf()
    top, left, height, width = geometry[0], geometry[1], geometry[2], geometry[3]
    if spec.modality == "rgb":
        return parts[:, top : top + height, left : left + width]
    crops = parts[:, :height, :width]  # [2SL, h, w]
    return tf.reshape(crops, [spec.num_segments, 2 * spec.new_length, height, width])


def _resized(crops, crop_size: int):
    """uint8 [S, h, w, C] -> float32 [S, crop, crop, C] (bilinear; a cast when h = w = crop)."""
    tf = _tf()
    clip = tf.cast(crops, tf.float32)
    shape = tf.shape(crops)
    return tf.cond(
        tf.logical_and(tf.equal(shape[1], crop_size), tf.equal(shape[2], crop_size)),
        lambda: clip,
        lambda: tf.image.resize(clip, [crop_size, crop_size]),
    )


def _scaled_flow(flow, mirrored, normalization: str):
    """Resized quantised flow [S, crop, crop, 2L] (0-255, 127.5 = no motion) -> the spec's
    scale; a mirrored clip's x channels (even indices) are reversed (TSN's 255 - q)."""
    tf = _tf()
    channels = tf.range(tf.shape(flow)[-1])
    sign = tf.where(tf.logical_and(mirrored, channels % 2 == 0), -1.0, 1.0)  # [2L]
    if normalization == "none":  # the stored scale: 127.5 + sign * (v - 127.5)
        return tf.where(sign < 0, 255.0 - flow, flow)
    return (flow / 127.5 - 1.0) * sign  # minus_one_one: pixels / 20 = v / 127.5 - 1


def finish_crops(crops, mirrored, spec):
    """Crops (`crops_of_parts`) -> the clip: float32 [S, crop, crop, C].

    mirrored: bool scalar, the random flip. RGB uint8 [S, h, w, 3]; flow uint8 [S, 2L, h, w].
    """
    tf = _tf()
    if spec.modality == "flow":
        crops = tf.transpose(crops, [0, 2, 3, 1])  # [S, 2L, h, w] -> [S, h, w, 2L], at crop size
    crops = tf.cond(mirrored, lambda: tf.reverse(crops, axis=[2]), lambda: crops)
    clip = _resized(crops, spec.crop_size)
    if spec.modality == "flow":
        return _scaled_flow(clip, mirrored, spec.normalization)
    return augment.normalize_rgb(clip, spec.normalization)


def teacher_flow_parts(path, header: dict, starts, box, teacher_spec) -> list:
    """The flow crops a distillation teacher sees beside an RGB training clip
    (actrec.train.distillation.loss): for each of the student's frames (starts int32 [S]) the
    stack of teacher_spec.new_length flow fields from that frame on (moved back where the
    video ends), decoded in the student's crop box: 2 S L uint8 [h, w], as `decoded_parts`
    gives flow."""
    tf = _tf()
    num_flow = tf.cast(header["num_frames"] - 1, tf.int32)  # flow t: frames t and t + 1
    last_start = tf.maximum(num_flow - teacher_spec.new_length, 0)
    flow_starts = tf.minimum(tf.cast(starts, tf.int32), last_start)  # [S]
    frame_size = (header["height"], header["width"])
    jpegs = clip_jpegs(path, header, flow_starts, teacher_spec)
    parts, _ = decoded_parts(jpegs, box, teacher_spec, frame_size)
    return parts


def training_crops(path, header: dict, spec, seed, teacher_spec=None):
    """(parts, geometry) of one training example: the `decoded_parts` of its frames and
    int32 [5] (top, left, height, width, mirrored): where its crop box lies in each part,
    and its random flip. `finish_example` (or `finish_batch`) makes the clip.

    teacher_spec: a distilled run's flow ClipSpec (actrec.train.distillation.loss): the parts
    are then followed by the `teacher_flow_parts` of the same frames, crop box and flip,
    read in the same pass (finish with `finish_batch(..., teacher_spec)`)."""
    tf = _tf()
    sample_seed, crop_seed, flip_seed = sampling.split_seed(seed, 3)
    is_flow = spec.modality == "flow"
    num_frames = header["num_frames"] - 1 if is_flow else header["num_frames"]
    starts = clip_starts(num_frames, spec, True, sample_seed)  # [S]
    box = augment.multi_scale_crop_box(
        header["height"],
        header["width"],
        spec.crop_size,
        crop_seed,
        scales=spec.scales,
        max_distort=spec.max_distort,
        fixed_crop=spec.fixed_crop,
        more_fixed_crops=spec.more_fix_crop,
    )  # (top, left, h, w)
    frame_size = (header["height"], header["width"])
    parts, corner = decoded_parts(clip_jpegs(path, header, starts, spec), box, spec, frame_size)
    if teacher_spec is not None:
        parts = [*parts, *teacher_flow_parts(path, header, starts, box, teacher_spec)]
    mirrored = sampling.uniform_unit([], flip_seed) < 0.5
    if not spec.flip:
        mirrored = tf.constant(False)
    return parts, tf.concat([corner, box[2:], [tf.cast(mirrored, tf.int32)]], axis=0)


def finish_example(parts, geometry, spec):
    """One training clip from its `training_crops`: float32 [S, crop, crop, C]."""
    tf = _tf()
    crops = crops_of_parts(tf.stack(parts), geometry, spec)
    return finish_crops(crops, geometry[4] > 0, spec)


def finish_batch(parts, geometry, spec, teacher_spec=None):
    """Training clips float32 [B, S, crop, crop, C] from a batch of `training_crops`: parts
    padded and batched, each [B, ...], geometry int32 [B, 5].

    teacher_spec (a distilled run): (student clips as above, the teacher's flow clips
    float32 [B, S, crop', crop', 2L] at its own crop size, mirrored with the student's)."""
    tf = _tf()
    parts = list(parts)
    if teacher_spec is not None:
        student, teacher = parts[: spec.num_segments], parts[spec.num_segments :]
        return (
            finish_batch(student, geometry, spec),
            finish_batch(teacher, geometry, teacher_spec),
        )
    stacked = tf.stack(parts, axis=1)  # [B, S, H', W', 3] or [B, 2SL, H', W']

    def one(example):
        crops = crops_of_parts(example[0], example[1], spec)
        return finish_crops(crops, example[1][4] > 0, spec)

    signature = tf.TensorSpec(
        [spec.num_segments, spec.crop_size, spec.crop_size, spec.channels], tf.float32
    )
    return tf.map_fn(one, (stacked, geometry), fn_output_signature=signature)
