"""Which video, with which randomness, each example of an input pipeline is.

Example k of input pipeline i (of n) over a split of V videos, in training, is example
g = i + n * k of the run's one stream of examples:

    epoch e = g // V, position p = g mod V
    video   = the p-th entry of epoch e's permutation of the V videos
              (tf.random.experimental.index_shuffle, seeded by (seed, e))
    random  = one int64 drawn from (seed, e * V + p)       (sampling, crop and flip seeds)

Evaluation reads one epoch in the split's order (video = p, positions i, i + n, ... < V) and
draws nothing. Hence:

- any example is found without the examples before it: a resumed run starts its pipeline
  at example k and reads or decodes nothing it skipped (`build_dataset(start_example=k)`);
- in every epoch the pipelines read disjoint videos that together are the whole split,
  and a new permutation each epoch, whether or not n divides V;
- an example's video and randomness depend on g alone, not on the number of pipelines: two
  workers reading g = 0, 2, 4, ... and 1, 3, 5, ... see the clips one worker sees at
  g = 0, 1, 2, ... So a run that took S steps of global batch B on n workers continues on
  n' workers at g = S * B (pipeline j at k = S * B / n'): no example is skipped or
  repeated (the stream used to wrap each pipeline's epoch on its own, which misaligned
  the pipelines when n did not divide V).

Every function here is TensorFlow ops (usable inside tf.data functions).
"""

from __future__ import annotations

from actrec.errors import ConfigError


def examples_per_epoch(num_videos: int, num_pipelines: int, pipeline_id: int) -> int:
    """c: the examples input pipeline `pipeline_id` reads per epoch (positions i, i+n, ...)."""
    if num_videos < 1:
        raise ConfigError(f"num_videos={num_videos!r}: a split needs at least one video")
    if not 0 <= pipeline_id < num_pipelines:
        raise ConfigError(
            f"input pipeline {pipeline_id} of {num_pipelines} is not valid; ids run from 0 to "
            f"{num_pipelines - 1}"
        )
    return max(0, -(-(num_videos - pipeline_id) // num_pipelines))


def example_video(example, num_videos: int, num_pipelines: int, pipeline_id: int, seed: int | None):
    """(video index int64, random int64) of example `example` (int64 scalar tensor).

    seed None: evaluation order (the split's order, random 0); else training order.
    """
    import tensorflow as tf

    examples_per_epoch(num_videos, num_pipelines, pipeline_id)  # checks the arguments
    example = tf.cast(example, tf.int64)
    stream_example = pipeline_id + num_pipelines * example  # g
    epoch = stream_example // num_videos
    position = stream_example % num_videos
    if seed is None:
        return position, tf.constant(0, tf.int64)
    shuffle_seed = tf.stack([tf.constant(seed, tf.int64), epoch])  # a permutation per epoch
    video = tf.random.experimental.index_shuffle(
        position, seed=shuffle_seed, max_index=tf.constant(num_videos - 1, tf.int64)
    )
    draw_seed = tf.stack([tf.constant(seed, tf.int64), epoch * num_videos + position])
    random = tf.random.stateless_uniform(
        [], seed=draw_seed, minval=None, maxval=None, dtype=tf.int64
    )
    return tf.cast(video, tf.int64), random
