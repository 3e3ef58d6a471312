"""The record schema (format 2): our wire-format encoder against TensorFlow's own protobuf,
and random access to a video's frame records through the header's offsets."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from actrec.data.format import records, shards

tf = pytest.importorskip("tensorflow")


def _jpeg(image: np.ndarray) -> bytes:
    return cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 95])[1].tobytes()


def _video(num_frames: int = 5, label: int = 3, flow: bool = True) -> shards.VideoRecord:
    frames = [np.full((16, 24, 3), 20 * index, np.uint8) for index in range(num_frames)]
    flow_x = [np.full((16, 24), 100 + index, np.uint8) for index in range(num_frames - 1)]
    flow_y = [np.full((16, 24), 150 - index, np.uint8) for index in range(num_frames - 1)]
    return shards.VideoRecord(
        video_id="Class/v_Class_g01_c01",
        label=label,
        label_text="Class",
        height=16,
        width=24,
        rgb_jpegs=[_jpeg(frame) for frame in frames],
        flow_x_jpegs=[_jpeg(image) for image in flow_x] if flow else (),
        flow_y_jpegs=[_jpeg(image) for image in flow_y] if flow else (),
    )


def _framed(payloads) -> list[int]:
    """Offsets of records written one after another from byte 0."""
    offsets, position = [], 0
    for payload in payloads:
        offsets.append(position)
        position += len(payload) + 16
    return offsets


@pytest.mark.parametrize("label", [0, 3, 100, -1, 2**40])
def test_encoding_is_byte_identical_to_tensorflow_serialisation(label):
    video = _video(label=label)
    encoded = shards.encode_video_records(video)
    assert len(encoded) == 1 + 5 + 4
    frames = []
    for jpeg in video.rgb_jpegs:
        example = tf.train.SequenceExample()
        example.feature_lists.feature_list["image/encoded"].feature.add().bytes_list.value.append(
            jpeg
        )
        frames.append(example.SerializeToString(deterministic=True))
    for x, y in zip(video.flow_x_jpegs, video.flow_y_jpegs, strict=True):
        example = tf.train.SequenceExample()
        for key, image in (("flow/x/encoded", x), ("flow/y/encoded", y)):
            example.feature_lists.feature_list[key].feature.add().bytes_list.value.append(image)
        frames.append(example.SerializeToString(deterministic=True))
    offsets = _framed(frames)
    header = tf.train.SequenceExample()
    context = header.context.feature
    context["clip/label/index"].int64_list.value.append(label)
    context["clip/label/text"].bytes_list.value.append(b"Class")
    context["video/id"].bytes_list.value.append(video.video_id.encode())
    context["video/num_frames"].int64_list.value.append(5)
    context["image/height"].int64_list.value.append(16)
    context["image/width"].int64_list.value.append(24)
    context["video/rgb/offsets"].int64_list.value.extend(offsets[:5])
    context["video/flow/offsets"].int64_list.value.extend(offsets[5:])
    assert list(encoded) == [header.SerializeToString(deterministic=True), *frames]
    assert shards.framed_size(encoded) == offsets[-1] + len(frames[-1]) + 16 + len(encoded[0]) + 16


@pytest.fixture
def shard(tmp_path):
    """A TFRecord file of two videos (5 and 7 frames, the second RGB-only) and the byte
    offset of each header."""
    path = tmp_path / "train-00000-of-00001.tfrecord"
    headers = []
    with tf.io.TFRecordWriter(str(path)) as writer:
        position = 0
        for video in (_video(5), _video(7, label=1, flow=False)):
            encoded = shards.encode_video_records(video)
            headers.append(position)
            for record in encoded:
                writer.write(record)
            position += shards.framed_size(encoded)
    assert path.stat().st_size == position
    return path, headers


def test_a_clip_reads_its_frames_through_the_header_offsets_inside_tf_data(shard):
    path, headers = shard

    def clip(offset):
        header = records.read_header(tf.constant(str(path)), offset)
        rgb = records.rgb_jpegs(str(path), header, tf.constant([4, 1, 1]))
        levels = tf.stack([tf.io.decode_jpeg(rgb[index])[0, 0, 0] for index in range(3)])
        flow_x, flow_y = records.flow_jpeg_runs(str(path), header, tf.constant([2, 0]), 2)
        fields = tf.concat([flow_x, flow_y], 0)  # [8]
        flow = tf.stack([tf.io.decode_jpeg(fields[index])[0, 0, 0] for index in range(8)])
        return header["num_frames"], levels, flow

    dataset = tf.data.Dataset.from_tensor_slices(headers[:1]).map(clip)
    num_frames, levels, flow = next(iter(dataset))
    assert int(num_frames) == 5
    np.testing.assert_allclose(levels.numpy(), [80, 20, 20], atol=2)
    # x of flow frames 2, 3 then 0, 1 (runs of 2), then y of the same
    np.testing.assert_allclose(flow.numpy(), [102, 103, 100, 101, 148, 147, 150, 149], atol=2)


def test_rgb_only_video_has_no_flow_offsets_and_its_neighbour_is_found(shard):
    path, headers = shard
    header = records.read_header(tf.constant(str(path)), headers[1])
    assert int(header["num_frames"]) == 7 and int(header["label"]) == 1
    assert header["flow_offsets"].shape == (0,)
    assert int(header["frames_start"]) > headers[1]
    jpegs = records.rgb_jpegs(str(path), header, tf.constant([6]))
    assert int(tf.io.decode_jpeg(jpegs[0])[0, 0, 0]) == pytest.approx(120, abs=2)


def test_whole_videos_are_read_back_in_file_order(shard):
    path, _ = shard
    videos = list(records.iter_shard_videos(path))
    assert [len(video_records) for _, video_records in videos] == [1 + 5 + 4, 1 + 7]
    decoded = records.decode_video(videos[0][1])
    assert decoded["frames"].shape == (5, 16, 24, 3) and decoded["flow"].shape == (4, 16, 24, 2)
    np.testing.assert_allclose(decoded["flow"][3, 0, 0], [103, 147], atol=2)


def test_shard_names():
    assert shards.shard_file_name("train", 3) == "train-00003.tfrecord"
    assert shards.shard_file_name("test", 0, 12) == "test-00000-of-00012.tfrecord"
