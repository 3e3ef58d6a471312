"""The inference graph of an export (docs/architecture.md §6): decoded video in, class scores out.

    frames uint8 [N, F, H, W, 3]        (all decoded frames of N videos, any H, W)
    flow   uint8 [N, F-1, H, W, 2]      (quantised flow, x and y, as `actrec prepare` stores it)
      -> evaluation sampling            num_segments frames (x new_length flow fields)
      -> short side to scale_size, centre crop          [N, T, crop, crop, C]
      -> flow to the stored 0-255 scale (127.5 = no motion)
      -> the trained segment model(s) -> softmax (two-stream: weighted fusion)
      -> probabilities [N, K], top-k indices / probabilities / class names [N, k]

Every step is the one the evaluation pipeline takes for a record
(`actrec.data.input.clips.evaluation_clip`): the same crop and normalisation
(`clips.evaluation_crop`) and flow stacking (`clips.stack_flow_frames`), so an export
reproduces evaluation; `sampling.test_clip_indices` with one clip is the pipeline's
evaluation sampling (segment centres, or the centred dense clip).
Videos in one batch share F (pad or batch them by length); the sampled indices are the
same for all of them.
"""

from __future__ import annotations

from collections.abc import Sequence

from actrec.data.format import shards
from actrec.data.input import sampling
from actrec.data.input.clips import evaluation_crop, stack_flow_frames
from actrec.errors import ConfigError
from actrec.export.streams import INPUT_OF_MODALITY, ExportedStream
from actrec.models.fusion import WeightedScoreFusion
from actrec.models.score_fusion import TSN_STREAM_WEIGHTS

FRAMES_INPUT = INPUT_OF_MODALITY["rgb"]
FLOW_INPUT = INPUT_OF_MODALITY["flow"]
CHANNELS_OF_INPUT = {FRAMES_INPUT: 3, FLOW_INPUT: 2}
PROBABILITIES = "probabilities"
TOP_K_INDICES = "top_k_indices"
TOP_K_PROBABILITIES = "top_k_probabilities"
TOP_K_CLASSES = "top_k_classes"


def _checked_video_tensor(tensor, name: str):
    """`tensor` as rank 5 with C channels and at least one frame, else an
    InvalidArgumentError naming the input and the shape it must have.

    The signature declares these inputs with unknown rank: a loaded signature does not
    check the shape it declares, and with rank 5 declared the rank check below would be
    constant-folded away, leaving an obscure error deep in the graph.
    """
    import tensorflow as tf

    channels = CHANNELS_OF_INPUT[name]
    frames = "F" if name == FRAMES_INPUT else "F-1"
    expected = f"input '{name}' must be uint8 [N, {frames}, H, W, {channels}]"
    rank_check = tf.debugging.assert_equal(tf.rank(tensor), 5, message=expected)
    with tf.control_dependencies([rank_check]):
        # Padded, so that reading dimension 4 of a tensor of lower rank is not itself an
        # error (ops may run before the rank check fails; all checks say the same).
        shape = tf.concat([tf.shape(tensor), tf.zeros([5], tf.int32)], axis=0)  # [rank + 5]
        checks = [
            tf.debugging.assert_equal(shape[4], channels, message=expected),
            tf.debugging.assert_positive(shape[1], message=f"{expected}, with F >= 1 frames"),
            tf.debugging.assert_positive(
                tf.minimum(shape[2], shape[3]), message=f"{expected}, with H, W >= 1"
            ),
        ]
    with tf.control_dependencies(checks):
        return tf.ensure_shape(tensor, [None, None, None, None, channels])


def _sampled_frames(video, spec):
    """[N, F, H, W, C] -> [N, S*L, H, W, C]: the evaluation sample of every video."""
    import tensorflow as tf

    indices = sampling.test_clip_indices(
        tf.shape(video)[1],
        spec.num_segments,
        1,
        spec.sampling,
        spec.new_length,
        spec.frame_interval,
    )  # [1, S, L]
    return tf.gather(video, tf.reshape(indices, [-1]), axis=1)  # [N, S*L, H, W, C]


def clips_from_frames(frames, spec):
    """RGB evaluation clips: uint8 [N, F, H, W, 3] -> float32 [N, S, crop, crop, 3], 0-255."""
    import tensorflow as tf

    frames = _checked_video_tensor(frames, FRAMES_INPUT)
    sampled = tf.cast(_sampled_frames(frames, spec), tf.float32)  # [N, S, H, W, 3]
    shape = tf.shape(sampled)
    merged = tf.reshape(sampled, [-1, shape[2], shape[3], 3])  # [N*S, H, W, 3]
    clips = evaluation_crop(merged, spec)  # [N*S, crop, crop, 3]
    # [N*S, crop, crop, 3] -> [N, S, crop, crop, 3]
    return tf.reshape(clips, [-1, spec.num_segments, spec.crop_size, spec.crop_size, 3])


def clips_from_flow(flow, spec):
    """Flow evaluation clips: quantised uint8 [N, F-1, H, W, 2] -> float32
    [N, S, crop, crop, 2L], channels interleaved [x0, y0, x1, y1, ...], stored 0-255 scale."""
    import tensorflow as tf

    flow = _checked_video_tensor(flow, FLOW_INPUT)
    sampled = _sampled_frames(flow, spec)  # [N, S*L, H, W, 2]
    shape = tf.shape(sampled)
    pixels = shards.dequantize_flow_tensor(
        tf.reshape(sampled, [-1, shape[2], shape[3], 2])
    )  # [N*S*L, H, W, 2] float32 pixels
    stacks = stack_flow_frames(
        pixels, shape[0] * spec.num_segments, spec.new_length
    )  # [N*S, H, W, 2L]
    clips = evaluation_crop(stacks, spec)  # [N*S, crop, crop, 2L]
    # [N*S, crop, crop, 2L] -> [N, S, crop, crop, 2L]
    return tf.reshape(clips, [-1, spec.num_segments, spec.crop_size, spec.crop_size, spec.channels])


def clips_from_inputs(stream: ExportedStream, video):
    """The evaluation clips of `stream` from its signature input."""
    if stream.modality == "rgb":
        return clips_from_frames(video, stream.spec)
    return clips_from_flow(video, stream.spec)


def input_signature(streams: Sequence[ExportedStream]) -> list:
    """The serving inputs, in stream order: TensorSpecs named "frames" / "flow"."""
    import tensorflow as tf

    # Unknown rank: the graph checks rank and channels itself (see _checked_video_tensor).
    return [tf.TensorSpec(None, tf.uint8, name=stream.input_name) for stream in streams]


def check_streams(streams: Sequence[ExportedStream]) -> None:
    """ConfigError unless the streams are one RGB, one flow, or RGB then flow."""
    modalities = [stream.modality for stream in streams]
    if modalities not in (["rgb"], ["flow"], ["rgb", "flow"]):
        raise ConfigError(
            f"an export takes one RGB stream, one flow stream, or one of each; got {modalities}"
        )


def build_serving_function(
    streams: Sequence[ExportedStream],
    classes: Sequence[str],
    top_k: int,
    fusion_weights: Sequence[float] | None = None,
    fusion_average: str = "logits",
):
    """A function (one uint8 tensor per stream, in stream order) -> dict of outputs:

    probabilities float32 [N, K] (two-stream: the weighted fusion of the streams' logits or
    softmax by `fusion_average`, `actrec.models.fusion.WeightedScoreFusion`);
    top_k_indices int32 [N, k];
    top_k_probabilities float32 [N, k]; top_k_classes string [N, k] with k = min(top_k, K);
    two-stream also rgb_probabilities and flow_probabilities [N, K].
    """
    import tensorflow as tf

    check_streams(streams)
    if not isinstance(top_k, int) or top_k < 1:
        raise ConfigError(f"top_k={top_k!r} is not valid; use a whole number >= 1")
    k = min(top_k, len(classes))
    fusion = None
    if len(streams) == 2:
        weights = TSN_STREAM_WEIGHTS if fusion_weights is None else fusion_weights
        fusion = WeightedScoreFusion(weights, fusion_average, dtype="float32", name="fusion")
    class_names = tf.constant(list(classes), tf.string)  # [K]

    def serve(*videos):
        videos = [
            _checked_video_tensor(video, stream.input_name)
            for stream, video in zip(streams, videos, strict=True)
        ]
        if len(videos) == 2:
            same_batch = tf.debugging.assert_equal(
                tf.shape(videos[0])[0],
                tf.shape(videos[1])[0],
                message="inputs 'frames' and 'flow' must hold the same number of videos N",
            )
            with tf.control_dependencies([same_batch]):
                videos = [tf.identity(video) for video in videos]
        logits = [
            stream.model(clips_from_inputs(stream, video), training=False)
            for stream, video in zip(streams, videos, strict=True)
        ]  # each [N, K]
        outputs = {}
        if fusion is None:
            probabilities = tf.nn.softmax(tf.cast(logits[0], tf.float32), axis=-1)
        else:
            probabilities = tf.cast(fusion(logits), tf.float32)
            for stream, stream_logits in zip(streams, logits, strict=True):
                outputs[f"{stream.modality}_{PROBABILITIES}"] = tf.nn.softmax(
                    tf.cast(stream_logits, tf.float32), axis=-1
                )
        values, indices = tf.math.top_k(probabilities, k=k)  # [N, k] each
        outputs[PROBABILITIES] = probabilities
        outputs[TOP_K_INDICES] = indices
        outputs[TOP_K_PROBABILITIES] = values
        outputs[TOP_K_CLASSES] = tf.gather(class_names, indices)
        return outputs

    return serve
