"""THE record schema, format 2: a video is a header record followed by one record per frame.

A training clip uses 8 of a Kinetics video's 250 frames; with one record per video (format
1) every clip read and CRC-checked the whole video (~5-10 MB). In format 2 the records of
one video are consecutive in one shard:

    header        tf.train.SequenceExample, context only:
                    clip/label/index        int64   0-based class, -1 when the split has none
                    clip/label/text         bytes   class name ("" when unlabelled)
                    video/id                bytes   the source's video id
                    video/num_frames        int64   T, RGB frames
                    image/height, image/width  int64  frame size as prepared
                    video/rgb/offsets       int64 [T]    where each RGB frame record starts,
                    video/flow/offsets      int64 [T-1]  and each flow record (absent with
                                                          --flow none), in bytes counted from
                                                          the first byte after the header
    T RGB frames  SequenceExample, sequence image/encoded: [one RGB JPEG]
    T-1 flows     SequenceExample, sequence flow/x/encoded, flow/y/encoded: [one greyscale
                  JPEG each] of the quantised flow between frames t and t+1

Offsets count the TFRecord framing (16 bytes per record: length, its CRC, payload CRC).
manifest.json gives each video's shard and the byte offset of its header, so a clip reads
its header and then only the frame records it samples (`actrec.data.format.records`).

Names and types follow the TF Model Garden video schema (context clip/label/index,
sequence image/encoded), but its readers take one record as one whole clip, so they cannot
consume these shards as they stand: the split per frame is what lets a clip read only its
frames.

Encoding runs in TensorFlow-free worker processes (cheap to start, no per-process TF
memory), so the records are written in the protobuf wire format directly; the fields are a
handful of length-delimited maps and lists, and `tests/data/test_shards.py` checks the bytes
against TensorFlow's own serialisation. Reading is in `actrec.data.format.records`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

LABEL_INDEX_KEY = "clip/label/index"
LABEL_TEXT_KEY = "clip/label/text"
VIDEO_ID_KEY = "video/id"
NUM_FRAMES_KEY = "video/num_frames"
HEIGHT_KEY = "image/height"
WIDTH_KEY = "image/width"
RGB_OFFSETS_KEY = "video/rgb/offsets"
FLOW_OFFSETS_KEY = "video/flow/offsets"
RGB_KEY = "image/encoded"
FLOW_X_KEY = "flow/x/encoded"
FLOW_Y_KEY = "flow/y/encoded"

SHARD_SUFFIX = ".tfrecord"
# A TFRecord record is uint64 length, uint32 masked CRC of the length, the payload, and a
# uint32 masked CRC of the payload (tensorflow/core/lib/io/record_writer.h).
RECORD_FRAMING_BYTES = 16


@dataclass(frozen=True)
class VideoRecord:
    """The content of one video's records, before encoding.

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


def _sequence_example(context: dict[str, bytes], sequences: dict[str, list[bytes]]) -> bytes:
    """SequenceExample{context = 1: Features, feature_lists = 2: FeatureLists}; an empty
    part is left out, as protobuf does for an unset message."""
    out = b""
    if context:
        out += _length_delimited(1, _map_entries(context))
    if sequences:
        lists = {
            key: b"".join(_length_delimited(1, feature) for feature in features)
            for key, features in sequences.items()
        }
        out += _length_delimited(2, _map_entries(lists))
    return out


def _framed_offsets(records: Sequence[bytes], start: int) -> list[int]:
    """Where each record starts when written one after another from byte `start`."""
    offsets = []
    for record in records:
        offsets.append(start)
        start += len(record) + RECORD_FRAMING_BYTES
    return offsets


def encode_video_records(record: VideoRecord) -> tuple[bytes, ...]:
    """Serialise `record` as its header followed by its frame records (deterministic bytes).

    Write them in this order, consecutively, into one TFRecord file.
    """
    rgb = [_sequence_example({}, {RGB_KEY: [_bytes_feature([jpeg])]}) for jpeg in record.rgb_jpegs]
    flow = [
        _sequence_example(
            {}, {FLOW_X_KEY: [_bytes_feature([x])], FLOW_Y_KEY: [_bytes_feature([y])]}
        )
        for x, y in zip(record.flow_x_jpegs, record.flow_y_jpegs, strict=True)
    ]
    rgb_offsets = _framed_offsets(rgb, 0)
    context = {
        LABEL_INDEX_KEY: _int64_feature([record.label]),
        LABEL_TEXT_KEY: _bytes_feature([record.label_text.encode()]),
        VIDEO_ID_KEY: _bytes_feature([record.video_id.encode()]),
        NUM_FRAMES_KEY: _int64_feature([len(rgb)]),
        HEIGHT_KEY: _int64_feature([record.height]),
        WIDTH_KEY: _int64_feature([record.width]),
        RGB_OFFSETS_KEY: _int64_feature(rgb_offsets),
    }
    if flow:
        flow_start = rgb_offsets[-1] + len(rgb[-1]) + RECORD_FRAMING_BYTES
        context[FLOW_OFFSETS_KEY] = _int64_feature(_framed_offsets(flow, flow_start))
    return (_sequence_example(context, {}), *rgb, *flow)


def records_digest(records: Iterable[bytes]) -> str:
    """sha256 of a video's serialised records, in order (the manifest's `digest`)."""
    digest = hashlib.sha256()
    for record in records:
        digest.update(record)
    return digest.hexdigest()


def framed_size(records: Iterable[bytes]) -> int:
    """Bytes the records take in a TFRecord file."""
    return sum(len(record) + RECORD_FRAMING_BYTES for record in records)


def dequantize_flow_tensor(quantized, bound: float = 20.0):
    """uint8 quantised flow [...] -> float32 pixels, inverse of docs/architecture.md §2's map."""
    import tensorflow as tf

    return tf.cast(quantized, tf.float32) * (2.0 * bound / 255.0) - bound


# --- shard names -------------------------------------------------------------------------


def shard_file_name(split: str, index: int, num_shards: int | None = None) -> str:
    """ "train-00003.tfrecord" while preparing; "train-00003-of-00012.tfrecord" when final."""
    if num_shards is None:
        return f"{split}-{index:05d}{SHARD_SUFFIX}"
    return f"{split}-{index:05d}-of-{num_shards:05d}{SHARD_SUFFIX}"
