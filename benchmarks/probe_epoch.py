"""One probe epoch from the feature cache against the same epoch through the frozen backbone
(issue 68's goal: >= 20x).

    python benchmarks/probe_epoch.py [--recipe videomae-probe-folder] [--set KEY=VALUE ...]
        [--videos-per-class 4] [--frame-size 256x256] [--rounds 3]

Generates the synthetic set (8 classes, `--videos-per-class` training videos each, frames of
`--frame-size`) in a temporary folder and prepares it; builds the recipe's model as a probe
run does (actrec.train.probe.probe_run) and computes the training split's features once.
Then, in one process, `--rounds` times each:

- from the cache: one epoch of the linear head on the cached rows (HeadTraining.epoch: the
  whole epoch one tf.function);
- through the backbone: the same epoch, every batch decoded from the shards (the views
  pipeline, actrec.data.input.views), through the backbone, then the same head step
  (HeadTraining.step) on its features, what a probe without a cache pays each epoch.

Both are traced first (one untimed epoch each). Prints the median seconds of each and their
ratio. The default is the recipe's full size (ViT-B, 16 frames at 224 px: minutes on a CPU);
`--set model.backbone=test_videomae --set data.crop_size=32 --set data.num_segments=4
--frame-size 48x40` checks the script in seconds.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="videomae-probe-folder")
    parser.add_argument("--set", dest="settings", action="append", default=[])
    parser.add_argument("--videos-per-class", type=int, default=4)
    parser.add_argument("--frame-size", default="256x256", help="WIDTHxHEIGHT of the videos")
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    width, height = (int(side) for side in arguments.frame_size.split("x"))

    import numpy as np
    import tensorflow as tf

    from actrec.config.files import load_recipe
    from actrec.config.overrides import apply_overrides
    from actrec.data.input.clip_spec import clip_spec
    from actrec.data.input.views import ViewSpec, build_view_dataset
    from actrec.data.prepare.dataset import prepare_dataset
    from actrec.data.prepare.encode_video import PrepareSettings
    from actrec.data.sources import list_videos
    from actrec.data.synthetic.config import SyntheticConfig
    from actrec.data.synthetic.dataset import generate_synthetic_dataset
    from actrec.models.factory import build_model
    from actrec.train.probe.features import compute_split_features
    from actrec.train.probe.head import HeadTraining
    from actrec.train.probe.probe_run import feature_network, rows_per_view
    from actrec.train.schedule import global_batch_size, learning_rate

    recipe = apply_overrides(load_recipe(arguments.recipe), arguments.settings)
    recipe = dataclasses.replace(recipe, model=dataclasses.replace(recipe.model, weights="none"))
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        config = SyntheticConfig(
            videos_per_class=arguments.videos_per_class + 1,  # one test video a class
            num_frames=max(24, recipe.data.num_segments * recipe.data.frame_interval + 1),
            width=width,
            height=height,
        )
        generate_synthetic_dataset(root / "raw", config)
        prepared = root / "prepared"
        prepare_dataset(
            list_videos("synthetic", root / "raw"),
            prepared,
            PrepareSettings(frame_size="original"),
            workers=1,
        )
        model = build_model(recipe.model, recipe.data, 8)
        network = feature_network(model)
        rows = rows_per_view(model, recipe.data.num_segments)
        spec = ViewSpec(clip=clip_spec(recipe, training=False))
        batch = global_batch_size(recipe.train, 0)
        cached = compute_split_features(network, prepared, "train", spec, batch, rows)
        features = tf.constant(cached.features.reshape(-1, cached.width))
        labels = tf.constant(np.repeat(cached.labels, spec.num_views))
        count = int(features.shape[0])
        batch = max(1, min(batch, count))
        steps = count // batch
        rates = tf.constant(
            [learning_rate(recipe.train, 0, step, steps) for step in range(steps)], tf.float32
        )
        head = HeadTraining(cached.width, 8, recipe.train)
        order = tf.constant(np.random.default_rng(0).permutation(count).astype(np.int32))

        @tf.function(reduce_retracing=True)
        def backbone_features(views):
            features = tf.cast(network(views, training=False), tf.float32)
            return tf.reduce_mean(tf.reshape(features, [-1, rows, cached.width]), axis=1)

        def cached_epoch() -> None:
            head.epoch(features, labels, order, rates, batch).numpy()

        def backbone_epoch() -> None:
            dataset = build_view_dataset(prepared, "train", spec, batch)
            for step, (views, view_labels, _, _) in enumerate(dataset):
                if step == steps:
                    break
                head.step(backbone_features(views), view_labels, rates[step]).numpy()

        seconds: dict[str, list[float]] = {"cache": [], "backbone": []}
        for name, epoch in (("cache", cached_epoch), ("backbone", backbone_epoch)):
            epoch()  # traced
            for _ in range(arguments.rounds):
                started = time.perf_counter()
                epoch()
                seconds[name].append(time.perf_counter() - started)
    median = {name: statistics.median(times) for name, times in seconds.items()}
    print(
        f"{arguments.recipe} ({recipe.model.backbone}, {recipe.data.num_segments} frames at "
        f"{recipe.data.crop_size} px), one epoch of {count} clips in {steps} "
        f"step{'s' * (steps > 1)} of {batch}, median of {arguments.rounds}:"
    )
    print(f"  from the feature cache: {median['cache'] * 1000:.2f} ms")
    print(f"  through the backbone:   {median['backbone']:.3f} s")
    print(f"  ratio: {median['backbone'] / median['cache']:.0f}x (goal >= 20x)")


if __name__ == "__main__":
    main()
