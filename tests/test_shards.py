"""The record schema: our wire-format encoder against TensorFlow's own protobuf."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from actrec.data import shards

tf = pytest.importorskip("tensorflow")


def _jpeg(image: np.ndarray) -> bytes:
    return cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 95])[1].tobytes()


def _record(num_frames: int = 5, label: int = 3, flow: bool = True) -> shards.VideoRecord:
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


@pytest.mark.parametrize("label", [0, 3, 100, -1, 2**40])
def test_encoding_is_byte_identical_to_tensorflow_serialisation(label):
    record = _record(label=label)
    serialized = shards.encode_video_record(record)
    example = tf.train.SequenceExample()
    example.context.feature["clip/label/index"].int64_list.value.append(label)
    example.context.feature["clip/label/text"].bytes_list.value.append(b"Class")
    example.context.feature["video/id"].bytes_list.value.append(record.video_id.encode())
    example.context.feature["video/num_frames"].int64_list.value.append(5)
    example.context.feature["image/height"].int64_list.value.append(16)
    example.context.feature["image/width"].int64_list.value.append(24)
    for key, images in (
        ("image/encoded", record.rgb_jpegs),
        ("flow/x/encoded", record.flow_x_jpegs),
        ("flow/y/encoded", record.flow_y_jpegs),
    ):
        for image in images:
            example.feature_lists.feature_list[key].feature.add().bytes_list.value.append(image)
    assert serialized == example.SerializeToString(deterministic=True)


def test_parse_and_decode_only_the_requested_frames():
    serialized = shards.encode_video_record(_record())
    parsed = shards.parse_video_record(tf.constant(serialized))
    assert parsed["video_id"].numpy() == b"Class/v_Class_g01_c01"
    assert int(parsed["label"]) == 3
    assert int(parsed["num_frames"]) == 5
    assert parsed["rgb"].shape == (5,) and parsed["flow_x"].shape == (4,)
    frames = shards.decode_rgb_frames(parsed["rgb"], tf.constant([4, 1]))
    assert frames.shape == (2, 16, 24, 3)
    np.testing.assert_allclose(frames.numpy()[:, 0, 0, 0], [80, 20], atol=2)
    flow = shards.decode_flow_frames(parsed["flow_x"], parsed["flow_y"], tf.constant([0, 3]))
    assert flow.shape == (2, 16, 24, 2)
    np.testing.assert_allclose(flow.numpy()[:, 0, 0, :], [[100, 150], [103, 147]], atol=2)
    pixels = shards.dequantize_flow_tensor(tf.constant([[0, 255]], tf.uint8))
    np.testing.assert_allclose(pixels.numpy(), [[-20.0, 20.0]])


def test_parse_inside_tf_data_graph():
    serialized = [shards.encode_video_record(_record(num_frames=n)) for n in (3, 6)]
    dataset = tf.data.Dataset.from_tensor_slices(serialized).map(
        lambda s: tf.shape(shards.decode_rgb_frames(shards.parse_video_record(s)["rgb"], [0, 1]))
    )
    assert [list(shape) for shape in dataset.as_numpy_iterator()] == [[2, 16, 24, 3]] * 2


def test_rgb_only_record_parses_without_flow():
    serialized = shards.encode_video_record(_record(flow=False))
    parsed = shards.parse_video_record(tf.constant(serialized), with_flow=False)
    assert parsed["rgb"].shape == (5,)
    assert "flow_x" not in parsed


def test_shard_names():
    assert shards.shard_file_name("train", 3) == "train-00003.tfrecord"
    assert shards.shard_file_name("test", 0, 12) == "test-00000-of-00012.tfrecord"
