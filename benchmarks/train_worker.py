"""One worker of benchmarks/train.py: times training steps; writes a JSON result.

Run by benchmarks/train.py (alone, or as a cluster worker with TF_CONFIG set).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--results", required=True)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--backbone", default="mobilenet_v2")
    parser.add_argument("--crop", type=int, default=224)
    parser.add_argument("--measure-pipeline", action="store_true")
    arguments = parser.parse_args()

    from actrec.cluster.strategy import build_strategy, cluster_from_environment

    cluster = cluster_from_environment()
    strategy = build_strategy("auto")  # before any TensorFlow op

    from actrec.config.recipe import TrainConfig
    from actrec.data.input.clip_spec import ClipSpec
    from actrec.data.input.pipeline import build_dataset
    from actrec.models.segment_model import build_segment_model
    from actrec.train.loop.trainer import DistributedTrainer

    spec = ClipSpec("rgb", num_segments=3, crop_size=arguments.crop)
    trainer = DistributedTrainer(
        strategy,
        lambda: build_segment_model(
            arguments.backbone,
            8,
            num_segments=3,
            input_size=arguments.crop,
            weights=None,
            partial_bn=False,
        ),
        TrainConfig(optimizer="sgd", momentum=0.9, weight_decay=0.0, clip_norm=None),
    )

    def dataset(context):
        return build_dataset(
            arguments.data,
            "train",
            spec,
            arguments.batch,
            training=True,
            seed=1,
            input_context=context,
            repeat=True,
        )

    batches = iter(trainer.distribute(dataset))
    result = {"worker": cluster.task_index}
    if arguments.measure_pipeline:
        local = iter(dataset(None))
        next(local)
        started = time.perf_counter()
        for _ in range(arguments.steps):
            next(local)
        result["pipeline_clips_per_second"] = (
            arguments.steps * arguments.batch / (time.perf_counter() - started)
        )
    for _ in range(3):  # warm-up: tracing, first allocations
        trainer.train_step(next(batches), 0.001)
    started = time.perf_counter()
    for _ in range(arguments.steps):
        trainer.train_step(next(batches), 0.001)
    with_pipeline = (time.perf_counter() - started) / arguments.steps
    result["step_seconds_pipeline"] = with_pipeline
    result["clips_per_second"] = arguments.batch / with_pipeline
    if arguments.measure_pipeline:
        held = next(batches)
        started = time.perf_counter()
        for _ in range(arguments.steps):
            trainer.train_step(held, 0.001)
        result["step_seconds_in_memory"] = (time.perf_counter() - started) / arguments.steps
    Path(arguments.results, f"worker-{cluster.task_index}.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main()
