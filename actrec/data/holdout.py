"""A seeded, stratified part of a prepared split held out for validation.

UCF101 and HMDB51 have no validation split, and choosing epochs or weights on the test
split makes the reported test accuracy optimistic. A run can instead hold out a fraction of
its training videos (the same share of every class, chosen by a seed): it validates and
keeps best.weights.h5 on them and never trains on them.

`held_out_videos` chooses the videos (scikit-learn's stratified `train_test_split`, from
the manifest, so every worker chooses the same); `filter_records` keeps or drops them in a
tf.data pipeline of serialised records, by their `video/id`.
"""

from __future__ import annotations

from collections.abc import Collection

from actrec.errors import ConfigError


def held_out_videos(manifest: dict, split: str, fraction: float, seed: int) -> tuple[str, ...]:
    """The ids of the prepared videos of `split` held out: `fraction` of each class, chosen
    by `seed` (sorted). ConfigError when a class has too few videos to give one up."""
    if fraction <= 0:
        return ()
    from sklearn.model_selection import train_test_split

    videos = sorted(
        (video["id"], video["label"])
        for video in manifest["videos"]
        if video["split"] == split and video["status"] == "ok"
    )
    ids, labels = [video_id for video_id, _ in videos], [label for _, label in videos]
    try:
        _, held_out = train_test_split(
            ids, test_size=fraction, stratify=labels, random_state=seed, shuffle=True
        )
    except ValueError as error:  # too few videos in a class, or fewer held out than classes
        raise ConfigError(
            f"data.validation_holdout={fraction}: cannot hold out a stratified {fraction:.0%} of "
            f"the {len(ids)} {split!r} videos in {len(set(labels))} classes ({error}); use a "
            "larger fraction, or data.validation_holdout=0"
        ) from None
    return tuple(sorted(held_out))


def filter_records(records, video_ids: Collection[str], keep: bool):
    """`records` (a tf.data.Dataset of serialised SequenceExamples) with only the videos
    in `video_ids` (keep=True), or without them (keep=False)."""
    import tensorflow as tf

    from actrec.data.shards import VIDEO_ID_KEY

    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(sorted(video_ids), tf.string),
            tf.ones([len(video_ids)], tf.int32),
        ),
        default_value=0,
    )

    def wanted(serialized):
        context, _ = tf.io.parse_single_sequence_example(
            serialized, context_features={VIDEO_ID_KEY: tf.io.FixedLenFeature([], tf.string)}
        )
        listed = tf.equal(table.lookup(context[VIDEO_ID_KEY]), 1)
        return listed if keep else tf.logical_not(listed)

    return records.filter(wanted)
