"""THE record schema: one `tf.train.SequenceExample` per video (DESIGN.md §2).

Names follow the TF Model Garden video schema so other tools can read the RGB part:

    context   clip/label/index  int64      0-based class, -1 when the split has no labels
              clip/label/text   bytes      class name ("" when unlabelled)
              video/id          bytes      the source's video id
              video/num_frames  int64      number of RGB frames T
              image/height, image/width    int64  frame size as prepared
    sequence  image/encoded     T x bytes  one RGB JPEG per frame
              flow/x/encoded    (T-1) x bytes  greyscale JPEG of the quantised x flow
              flow/y/encoded    (T-1) x bytes  between frame t and t+1 (absent with --flow none)

Encoding runs in TensorFlow-free worker processes (cheap to start, no per-process TF
memory), so `encode_video_record` writes the protobuf wire format directly; the fields are
a handful of length-delimited maps and lists, and `tests/test_shards.py` checks the bytes
parse with TensorFlow's own parser. Parsing and decoding use TensorFlow and import it
lazily, so importing this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

LABEL_INDEX_KEY = "clip/label/index"
LABEL_TEXT_KEY = "clip/label/text"
VIDEO_ID_KEY = "video/id"
NUM_FRAMES_KEY = "video/num_frames"
HEIGHT_KEY = "image/height"
WIDTH_KEY = "image/width"
RGB_KEY = "image/encoded"
FLOW_X_KEY = "flow/x/encoded"
FLOW_Y_KEY = "flow/y/encoded"

SHARD_SUFFIX = ".tfrecord"


@dataclass(frozen=True)
class VideoRecord:
    """The content of one record, before encoding.

    rgb_jpegs: T JPEG images; flow_x_jpegs / flow_y_jpegs: T-1 greyscale JPEGs each, or
    empty tuples for RGB-only preparation.
    """

    video_id: str
    label: int
    label_text: str
    height: int
    width: int
    rgb_jpegs: Sequence[bytes]
    flow_x_jpegs: Sequence[bytes] = ()
    flow_y_jpegs: Sequence[bytes] = ()


# --- protobuf wire format (tensorflow/core/example/{example,feature}.proto) -----------------


def _varint(value: int) -> bytes:
    if value < 0:  # int64 fields encode negatives as 64-bit two's complement
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _length_delimited(field_number: int, payload: bytes) -> bytes:
    return _varint((field_number << 3) | 2) + _varint(len(payload)) + payload


def _bytes_feature(values: Iterable[bytes]) -> bytes:
    """Feature{bytes_list = 1: BytesList{repeated bytes value = 1}}."""
    bytes_list = b"".join(_length_delimited(1, value) for value in values)
    return _length_delimited(1, bytes_list)


def _int64_feature(values: Iterable[int]) -> bytes:
    """Feature{int64_list = 3: Int64List{repeated int64 value = 1 [packed]}}."""
    packed = b"".join(_varint(value) for value in values)
    return _length_delimited(3, _length_delimited(1, packed))


def _map_entries(entries: dict[str, bytes]) -> bytes:
    """A proto map<string, Message> as field 1 entries {key = 1, value = 2}, keys sorted."""
    return b"".join(
        _length_delimited(1, _length_delimited(1, key.encode()) + _length_delimited(2, value))
        for key, value in sorted(entries.items())
    )


def _feature_list(features: Iterable[bytes]) -> bytes:
    """FeatureList{repeated Feature feature = 1}."""
    return b"".join(_length_delimited(1, feature) for feature in features)


def encode_video_record(record: VideoRecord) -> bytes:
    """Serialise `record` as a tf.train.SequenceExample (deterministic bytes)."""
    context = {
        LABEL_INDEX_KEY: _int64_feature([record.label]),
        LABEL_TEXT_KEY: _bytes_feature([record.label_text.encode()]),
        VIDEO_ID_KEY: _bytes_feature([record.video_id.encode()]),
        NUM_FRAMES_KEY: _int64_feature([len(record.rgb_jpegs)]),
        HEIGHT_KEY: _int64_feature([record.height]),
        WIDTH_KEY: _int64_feature([record.width]),
    }
    sequences = {RGB_KEY: _feature_list(_bytes_feature([jpeg]) for jpeg in record.rgb_jpegs)}
    if record.flow_x_jpegs:
        sequences[FLOW_X_KEY] = _feature_list(_bytes_feature([j]) for j in record.flow_x_jpegs)
        sequences[FLOW_Y_KEY] = _feature_list(_bytes_feature([j]) for j in record.flow_y_jpegs)
    return _length_delimited(1, _map_entries(context)) + _length_delimited(
        2, _map_entries(sequences)
    )


# --- shard names -------------------------------------------------------------------------


def shard_file_name(split: str, index: int, num_shards: int | None = None) -> str:
    """ "train-00003.tfrecord" while preparing; "train-00003-of-00012.tfrecord" when final."""
    if num_shards is None:
        return f"{split}-{index:05d}{SHARD_SUFFIX}"
    return f"{split}-{index:05d}-of-{num_shards:05d}{SHARD_SUFFIX}"


# --- parsing (TensorFlow) -------------------------------------------------------------------


def parse_video_record(serialized, with_flow: bool = True) -> dict:
    """Parse one serialised record into tensors; no JPEG is decoded here.

    Returns a dict: "video_id" (string), "label" (int64), "label_text" (string),
    "num_frames" (int64), "rgb" (string [T]), and with_flow: "flow_x", "flow_y" (string [T-1]).
    Works inside tf.data (graph mode) and eagerly.
    """
    import tensorflow as tf

    context_features = {
        LABEL_INDEX_KEY: tf.io.FixedLenFeature([], tf.int64),
        LABEL_TEXT_KEY: tf.io.FixedLenFeature([], tf.string, default_value=""),
        VIDEO_ID_KEY: tf.io.FixedLenFeature([], tf.string),
        NUM_FRAMES_KEY: tf.io.FixedLenFeature([], tf.int64),
    }
    sequence_features = {RGB_KEY: tf.io.FixedLenSequenceFeature([], tf.string)}
    if with_flow:
        sequence_features[FLOW_X_KEY] = tf.io.FixedLenSequenceFeature([], tf.string)
        sequence_features[FLOW_Y_KEY] = tf.io.FixedLenSequenceFeature([], tf.string)
    context, sequences = tf.io.parse_single_sequence_example(
        serialized, context_features=context_features, sequence_features=sequence_features
    )
    parsed = {
        "video_id": context[VIDEO_ID_KEY],
        "label": context[LABEL_INDEX_KEY],
        "label_text": context[LABEL_TEXT_KEY],
        "num_frames": context[NUM_FRAMES_KEY],
        "rgb": sequences[RGB_KEY],
    }
    if with_flow:
        parsed["flow_x"] = sequences[FLOW_X_KEY]
        parsed["flow_y"] = sequences[FLOW_Y_KEY]
    return parsed


def decode_rgb_frames(encoded, indices):
    """Decode only the frames at `indices`.

    encoded: string [T]; indices: int [N] -> uint8 [N, H, W, 3].
    """
    import tensorflow as tf

    selected = tf.gather(encoded, indices)
    return tf.map_fn(
        lambda jpeg: tf.io.decode_jpeg(jpeg, channels=3),
        selected,
        fn_output_signature=tf.TensorSpec([None, None, 3], tf.uint8),
    )


def decode_flow_frames(encoded_x, encoded_y, indices):
    """Decode the quantised flow at `indices`: string [T-1] x2, int [N] -> uint8 [N, H, W, 2].

    Values are the stored quantisation (128 = no motion); `dequantize_flow_tensor` gives pixels.
    """
    import tensorflow as tf

    def decode_one(jpeg):
        return tf.io.decode_jpeg(jpeg, channels=1)[..., 0]

    spec = tf.TensorSpec([None, None], tf.uint8)
    flow_x = tf.map_fn(decode_one, tf.gather(encoded_x, indices), fn_output_signature=spec)
    flow_y = tf.map_fn(decode_one, tf.gather(encoded_y, indices), fn_output_signature=spec)
    return tf.stack([flow_x, flow_y], axis=-1)  # [N, H, W, 2]


def dequantize_flow_tensor(quantized, bound: float = 20.0):
    """uint8 quantised flow [..., 2] -> float32 pixels, inverse of DESIGN.md §2's map."""
    import tensorflow as tf

    return tf.cast(quantized, tf.float32) * (2.0 * bound / 255.0) - bound


def iter_serialized_records(path):
    """Yield the serialised records (bytes) of one TFRecord shard, in file order."""
    import tensorflow as tf

    yield from tf.data.TFRecordDataset(str(path)).as_numpy_iterator()
