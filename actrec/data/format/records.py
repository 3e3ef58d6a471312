"""Reading format-2 shards (actrec.data.format.shards): a video's header, then only the frame
records a clip samples.

Random access: `tf.data.TFRecordDataset` has no byte offset, but the op beneath it,
`TFRecordDatasetV2`, takes one per file; `record_at` starts such a dataset at a record's
first byte, unbuffered, and takes the records asked for, so a clip reads (and CRC-checks)
its header and its frames, nothing else. Every function here is made of TensorFlow ops and
runs inside tf.data functions.

Python helpers at the end read whole videos (inspection, prediction, migration, tests).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from actrec.data.format import shards
from actrec.data.format.manifest import read_manifest, shard_paths
from actrec.errors import DatasetError


def _tf():
    import tensorflow as tf

    return tf


def _dataset_at(path, offset):
    """The records of TFRecord file `path` from byte `offset` on (no read-ahead buffer)."""
    tf = _tf()
    variant = tf.raw_ops.TFRecordDatasetV2(
        filenames=tf.reshape(path, [1]),
        compression_type="",
        buffer_size=tf.constant(0, tf.int64),  # 0: read exactly the records taken
        byte_offsets=tf.reshape(tf.cast(offset, tf.int64), [1]),
    )
    return tf.data.experimental.from_variant(variant, tf.TensorSpec([], tf.string))


def record_at(path, offset):
    """The record starting at byte `offset` of `path`: string [].

    No `batch` before `get_single_element`: one dataset op fewer per read, which is a
    measurable share of a clip's time (about 40 microseconds a read).
    """
    return _dataset_at(path, offset).take(1).get_single_element()


def runs_of_records(path, offsets, count):
    """`count` consecutive records from each of `offsets` (int64 [N]): string [N * count].

    count may be a scalar tensor; each run is one read.
    """
    tf = _tf()
    offsets = tf.cast(offsets, tf.int64)
    count = tf.cast(count, tf.int64)
    runs = tf.data.Dataset.from_tensor_slices(offsets).flat_map(
        lambda offset: _dataset_at(path, offset).take(count)
    )
    return runs.batch(tf.size(offsets, out_type=tf.int64) * count).get_single_element()


def parse_header(serialized) -> dict:
    """A header record's context: "video_id", "label_text" (string), "label",
    "num_frames", "height", "width" (int64), "rgb_offsets" int64 [T], "flow_offsets"
    int64 [T-1] (empty without flow)."""
    tf = _tf()
    context, _ = tf.io.parse_single_sequence_example(
        serialized,
        context_features={
            shards.LABEL_INDEX_KEY: tf.io.FixedLenFeature([], tf.int64),
            shards.LABEL_TEXT_KEY: tf.io.FixedLenFeature([], tf.string, default_value=""),
            shards.VIDEO_ID_KEY: tf.io.FixedLenFeature([], tf.string),
            shards.NUM_FRAMES_KEY: tf.io.FixedLenFeature([], tf.int64),
            shards.HEIGHT_KEY: tf.io.FixedLenFeature([], tf.int64),
            shards.WIDTH_KEY: tf.io.FixedLenFeature([], tf.int64),
            shards.RGB_OFFSETS_KEY: tf.io.VarLenFeature(tf.int64),
            shards.FLOW_OFFSETS_KEY: tf.io.VarLenFeature(tf.int64),
        },
    )
    return {
        "video_id": context[shards.VIDEO_ID_KEY],
        "label": context[shards.LABEL_INDEX_KEY],
        "label_text": context[shards.LABEL_TEXT_KEY],
        "num_frames": context[shards.NUM_FRAMES_KEY],
        "height": context[shards.HEIGHT_KEY],
        "width": context[shards.WIDTH_KEY],
        "rgb_offsets": tf.sparse.to_dense(context[shards.RGB_OFFSETS_KEY]),
        "flow_offsets": tf.sparse.to_dense(context[shards.FLOW_OFFSETS_KEY]),
    }


def read_header(path, offset) -> dict:
    """`parse_header` of the header at byte `offset` of `path`, plus "frames_start" (int64):
    the byte where its frame records begin (what the offsets count from)."""
    tf = _tf()
    serialized = record_at(path, offset)
    header = parse_header(serialized)
    header["frames_start"] = (
        tf.cast(offset, tf.int64)
        + tf.cast(tf.strings.length(serialized), tf.int64)
        + shards.RECORD_FRAMING_BYTES
    )
    return header


def _frame_features(records, keys: Sequence[str]) -> list:
    """One string [N] per key from N frame records."""
    tf = _tf()
    _, sequences, _ = tf.io.parse_sequence_example(
        records,
        sequence_features={key: tf.io.FixedLenSequenceFeature([], tf.string) for key in keys},
    )
    return [sequences[key][:, 0] for key in keys]  # [N, 1] -> [N]


def rgb_jpegs(path, header: dict, indices):
    """The RGB JPEGs of frames `indices` (int [N], one read each): string [N].

    With N known when tracing, the N reads are unrolled (N `record_at`): cheaper per clip
    than one `runs_of_records`, whose flat_map instantiates its function for every read.
    """
    tf = _tf()
    offsets = header["frames_start"] + tf.gather(header["rgb_offsets"], indices)
    count = offsets.shape[0]
    if count is None:
        records = runs_of_records(path, offsets, 1)
    else:
        records = tf.stack([record_at(path, offsets[index]) for index in range(count)])
    return _frame_features(records, [shards.RGB_KEY])[0]


def flow_jpeg_runs(path, header: dict, starts, count):
    """`count` consecutive flow records from each flow index in `starts` (int [S], one read
    per start): (x, y) string [S * count] each, run by run."""
    tf = _tf()
    offsets = header["frames_start"] + tf.gather(header["flow_offsets"], starts)
    records = runs_of_records(path, offsets, count)
    flow_x, flow_y = _frame_features(records, [shards.FLOW_X_KEY, shards.FLOW_Y_KEY])
    return flow_x, flow_y


# --- whole videos (Python) --------------------------------------------------------------------


def _header_record_count(example) -> int:
    """Frame records that follow a parsed header (tf.train.SequenceExample)."""
    context = example.context.feature
    return len(context[shards.RGB_OFFSETS_KEY].int64_list.value) + len(
        context[shards.FLOW_OFFSETS_KEY].int64_list.value
    )


def iter_shard_videos(path: Path | str) -> Iterator[tuple[object, tuple[bytes, ...]]]:
    """(header as tf.train.SequenceExample, the video's records, header first) for every
    video of one shard, in file order. DatasetError when the file is not format 2."""
    tf = _tf()
    pending: list[bytes] = []
    header, expected = None, 0
    for serialized in tf.data.TFRecordDataset(str(path)).as_numpy_iterator():
        if header is None:
            example = tf.train.SequenceExample.FromString(serialized)
            if shards.RGB_OFFSETS_KEY not in example.context.feature:
                raise DatasetError(
                    f"{path}: a record where a video header belongs has no "
                    f"{shards.RGB_OFFSETS_KEY}; the shard is damaged or not format 2 "
                    "(`actrec inspect` the folder, then prepare it again)"
                )
            header, expected, pending = example, _header_record_count(example), [serialized]
        else:
            pending.append(serialized)
        if len(pending) == expected + 1:
            yield header, tuple(pending)
            header = None
    if header is not None:
        raise DatasetError(f"{path}: the last video's records stop early; prepare it again")


def iter_split_videos(prepared_dir: Path | str, split: str):
    """(video id, its records) of every video of `split`, in the split's order."""
    prepared_dir = Path(prepared_dir)
    for path in shard_paths(prepared_dir, read_manifest(prepared_dir), split):
        for header, video_records in iter_shard_videos(path):
            yield (
                header.context.feature[shards.VIDEO_ID_KEY].bytes_list.value[0].decode(),
                (video_records),
            )


def video_record(video_records: Sequence[bytes]) -> shards.VideoRecord:
    """The content of one video's records (the inverse of shards.encode_video_records)."""
    tf = _tf()
    header = tf.train.SequenceExample.FromString(video_records[0]).context.feature
    frames = [tf.train.SequenceExample.FromString(record) for record in video_records[1:]]
    num_frames = len(header[shards.RGB_OFFSETS_KEY].int64_list.value)

    def jpegs(examples, key: str) -> tuple[bytes, ...]:
        return tuple(
            e.feature_lists.feature_list[key].feature[0].bytes_list.value[0] for e in examples
        )

    return shards.VideoRecord(
        video_id=header[shards.VIDEO_ID_KEY].bytes_list.value[0].decode(),
        label=int(header[shards.LABEL_INDEX_KEY].int64_list.value[0]),
        label_text=header[shards.LABEL_TEXT_KEY].bytes_list.value[0].decode(),
        height=int(header[shards.HEIGHT_KEY].int64_list.value[0]),
        width=int(header[shards.WIDTH_KEY].int64_list.value[0]),
        rgb_jpegs=jpegs(frames[:num_frames], shards.RGB_KEY),
        flow_x_jpegs=jpegs(frames[num_frames:], shards.FLOW_X_KEY),
        flow_y_jpegs=jpegs(frames[num_frames:], shards.FLOW_Y_KEY),
    )


def decode_video(records: Sequence[bytes], with_rgb: bool = True, with_flow: bool = True) -> dict:
    """Every frame of one video's records: {"frames": uint8 [T, H, W, 3], "flow": uint8
    [T-1, H, W, 2] (quantised, 128 = no motion)} (the keys asked for)."""
    import numpy as np

    tf = _tf()
    header = parse_header(records[0])
    num_frames = int(header["num_frames"])
    frame_records = tf.constant(list(records[1:]))
    inputs = {}
    if with_rgb:
        (jpegs,) = _frame_features(frame_records[:num_frames], [shards.RGB_KEY])
        inputs["frames"] = np.stack([tf.io.decode_jpeg(jpeg, channels=3).numpy() for jpeg in jpegs])
    if with_flow:
        flow_x, flow_y = _frame_features(
            frame_records[num_frames:], [shards.FLOW_X_KEY, shards.FLOW_Y_KEY]
        )
        inputs["flow"] = np.stack(
            [
                np.stack(
                    [
                        tf.io.decode_jpeg(x, channels=1).numpy()[..., 0],
                        tf.io.decode_jpeg(y, channels=1).numpy()[..., 0],
                    ],
                    axis=-1,
                )
                for x, y in zip(flow_x, flow_y, strict=True)
            ]
        )
    return inputs
