"""Class-balanced training order (`train.class_balance: sampling`): which video, with which
randomness, each example is, with the classes drawn equally often.

The contract is actrec.data.input.order's: example k of input pipeline i (of n) is example
g = i + n * k of the run's one stream, epoch e = g // V, position p = g mod V over a split
of V videos in C classes (those with at least one video), and everything is a function of
(seed, g) alone, so a run resumes at any example without reading the ones before it and
one pipeline sees what two together see. An epoch keeps the split's length V:

    q     = the p-th entry of epoch e's permutation of 0 .. V-1 (seeded by (seed, e))
    class = the (q mod C)-th class            (each class ceil or floor of V / C times an epoch)
    j     = q // C                            (the class's j-th draw of the epoch)
    t     = e * m_c + j                       (its draw over the run; m_c: draws an epoch)
    video = entry (t mod n_c) of the class's permutation of its n_c videos number t // n_c
            (seeded by (seed, class, t // n_c)): a class's videos come one each before any
            repeats, in a new seeded order every round
    random = one int64 drawn from (seed, e * V + p)  (as in actrec.data.input.order)

Every function here is TensorFlow ops (usable inside tf.data functions), but
`class_members`, which is Python.
"""

from __future__ import annotations

from collections.abc import Sequence

from actrec.data.input.order import examples_per_epoch
from actrec.errors import DatasetError

# Salt of the per-class permutations' seeds (kept apart from the epoch permutation's).
_CLASS_SALT = 1_000_003


def class_members(labels: Sequence[int]) -> tuple[list[int], list[int], list[int]]:
    """(members, offsets, counts) of the classes present in `labels` (one label per video):
    members lists the video indices class by class (ascending labels, videos in split
    order); class c (the c-th present label) is members[offsets[c] : offsets[c] + counts[c]].
    DatasetError when a label is missing (< 0)."""
    missing = [index for index, label in enumerate(labels) if int(label) < 0]
    if missing:
        raise DatasetError(
            f"class-balanced sampling needs a label for every training video; video "
            f"{missing[0]} of the split has none; prepare the training split with its labels"
        )
    by_class: dict[int, list[int]] = {}
    for index, label in enumerate(labels):
        by_class.setdefault(int(label), []).append(index)
    members, offsets, counts = [], [], []
    for label in sorted(by_class):
        offsets.append(len(members))
        counts.append(len(by_class[label]))
        members.extend(by_class[label])
    return members, offsets, counts


def balanced_example_video(
    example, labels: Sequence[int], num_pipelines: int, pipeline_id: int, seed: int
):
    """(video index int64, random int64) of example `example` (int64 scalar tensor) in the
    class-balanced order of a training split whose videos have `labels` (see above)."""
    import tensorflow as tf

    num_videos = len(labels)
    examples_per_epoch(num_videos, num_pipelines, pipeline_id)  # checks the arguments
    members, offsets, counts = class_members(labels)
    num_classes = len(counts)
    seed = tf.constant(seed, tf.int64)
    example = tf.cast(example, tf.int64)
    stream_example = pipeline_id + num_pipelines * example  # g
    epoch = stream_example // num_videos
    position = stream_example % num_videos
    slot = tf.random.experimental.index_shuffle(
        position, seed=tf.stack([seed, epoch]), max_index=tf.constant(num_videos - 1, tf.int64)
    )
    slot = tf.cast(slot, tf.int64)
    class_index = slot % num_classes
    draw_in_epoch = slot // num_classes
    # draws of class c per epoch: the slots q < V with q mod C = c
    draws_per_epoch = (num_videos - class_index + num_classes - 1) // num_classes
    draw = epoch * draws_per_epoch + draw_in_epoch
    count = tf.gather(tf.constant(counts, tf.int64), class_index)
    round_seed = tf.stack([seed, _CLASS_SALT * (class_index + 1) + draw // count])
    member = tf.random.experimental.index_shuffle(
        draw % count, seed=round_seed, max_index=count - 1
    )
    offset = tf.gather(tf.constant(offsets, tf.int64), class_index)
    video = tf.gather(tf.constant(members, tf.int64), offset + tf.cast(member, tf.int64))
    draw_seed = tf.stack([seed, epoch * num_videos + position])
    random = tf.random.stateless_uniform(
        [], seed=draw_seed, minval=None, maxval=None, dtype=tf.int64
    )
    return video, random
