"""Format 1 of prepared data (actrec before format 2): one tf.train.SequenceExample per
video, every frame in it, so every clip read and CRC-checked its whole video.

    context   clip/label/index, clip/label/text, video/id, video/num_frames,
              image/height, image/width
    sequence  image/encoded [T], flow/x/encoded and flow/y/encoded [T-1] (when prepared)

Kept to convert old folders (`actrec migrate`) and to build format-1 data for comparisons.
"""

from __future__ import annotations

from actrec.data.format import shards


def video_record(serialized: bytes):
    """A format-1 record -> shards.VideoRecord (the content format 2 writes)."""
    import tensorflow as tf

    example = tf.train.SequenceExample.FromString(serialized)
    context, lists = example.context.feature, example.feature_lists.feature_list

    def jpegs(key: str) -> tuple[bytes, ...]:
        return tuple(feature.bytes_list.value[0] for feature in lists[key].feature)

    text = context[shards.LABEL_TEXT_KEY].bytes_list.value
    return shards.VideoRecord(
        video_id=context[shards.VIDEO_ID_KEY].bytes_list.value[0].decode(),
        label=int(context[shards.LABEL_INDEX_KEY].int64_list.value[0]),
        label_text=text[0].decode() if text else "",
        height=int(context[shards.HEIGHT_KEY].int64_list.value[0]),
        width=int(context[shards.WIDTH_KEY].int64_list.value[0]),
        rgb_jpegs=jpegs(shards.RGB_KEY),
        flow_x_jpegs=jpegs(shards.FLOW_X_KEY) if shards.FLOW_X_KEY in lists else (),
        flow_y_jpegs=jpegs(shards.FLOW_Y_KEY) if shards.FLOW_Y_KEY in lists else (),
    )


def serialized_record(video) -> bytes:
    """The format-1 record of a shards.VideoRecord (TensorFlow's protobuf serialisation)."""
    import tensorflow as tf

    example = tf.train.SequenceExample()
    context = example.context.feature
    context[shards.LABEL_INDEX_KEY].int64_list.value.append(video.label)
    context[shards.LABEL_TEXT_KEY].bytes_list.value.append(video.label_text.encode())
    context[shards.VIDEO_ID_KEY].bytes_list.value.append(video.video_id.encode())
    context[shards.NUM_FRAMES_KEY].int64_list.value.append(len(video.rgb_jpegs))
    context[shards.HEIGHT_KEY].int64_list.value.append(video.height)
    context[shards.WIDTH_KEY].int64_list.value.append(video.width)
    streams = [(shards.RGB_KEY, video.rgb_jpegs)]
    if video.flow_x_jpegs:
        streams += [
            (shards.FLOW_X_KEY, video.flow_x_jpegs),
            (shards.FLOW_Y_KEY, video.flow_y_jpegs),
        ]
    for key, images in streams:
        for image in images:
            example.feature_lists.feature_list[key].feature.add().bytes_list.value.append(image)
    return example.SerializeToString(deterministic=True)
