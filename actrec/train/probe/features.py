"""The slow pass of a probe: every view of a prepared split through the frozen backbone.

    views of video v (actrec.data.input.views: the evaluation's decoding, crops and order)
      -> feature network  [B, T, crop, crop, C] -> [B, D]
      -> row v of features [V, views, D]

The views are exactly those `actrec eval` scores with the same view spec, so the probe's
logits on a cached row are the trained model's on that view.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

from actrec.data.format.manifest import read_manifest, split_videos
from actrec.data.input.views import ViewSpec, build_view_dataset
from actrec.progress import NullProgress, Progress
from actrec.train.probe.feature_cache import SplitFeatures


def compute_split_features(
    feature_network,
    prepared_dir: Path | str,
    split: str,
    spec: ViewSpec,
    batch_size: int,
    rows_per_view: int = 1,
    progress: Progress | None = None,
) -> SplitFeatures:
    """The features of every view of `split` (see the module): float32 [V, views, D], with
    the videos' labels and ids in the split's order. rows_per_view: the network's rows per
    view (a segment model's T, averaged). Progress counts views."""
    progress = progress or NullProgress()
    videos = split_videos(prepared_dir, read_manifest(prepared_dir), split)
    width = int(feature_network.outputs[0].shape[-1])
    features = np.zeros([len(videos), spec.num_views, width], np.float32)
    labels = np.array([int(video["label"]) for video in videos], np.int32)
    video_ids = np.array([str(video["id"]) for video in videos])
    filled = np.zeros(len(videos), np.int64)  # views placed per video so far

    @tf.function(reduce_retracing=True)
    def forward(views):
        rows = tf.cast(feature_network(views, training=False), tf.float32)  # [B * rows, D]
        # [B * rows, D] -> [B, rows, D] -> [B, D]
        return tf.reduce_mean(tf.reshape(rows, [-1, rows_per_view, width]), axis=1)

    progress.start(
        f"features of {split}: {len(videos)} videos, {spec.num_views} "
        f"view{'s' * (spec.num_views > 1)} each",
        len(videos) * spec.num_views,
    )
    try:
        dataset = build_view_dataset(prepared_dir, split, spec, batch_size)
        for views, _, positions, _ in dataset:
            rows = forward(views).numpy()  # [B, D]
            for row, position in zip(rows, positions.numpy(), strict=True):
                features[position, filled[position]] = row
                filled[position] += 1
            progress.advance(len(rows))
    finally:
        progress.finish()
    return SplitFeatures(features, labels, video_ids)
