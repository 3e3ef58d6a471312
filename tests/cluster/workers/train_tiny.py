"""A tiny training worker for the multi-worker tests (started by launch_local_workers).

    python tests/cluster/workers/train_tiny.py --out DIR [--global-batch 8] [--steps 6]
        [--scenario name=NAME,sync=allreduce|kavg,k=K,optimizer=sgd|adam,bn=0|1,
                    precision=none|float16|bfloat16,accumulation=A,rules=0|1,
                    distill=0|1 ...]
        [--crash-worker I --crash-at-step S]

Every scenario trains a fresh DistributedTrainer (same seed) on the same deterministic
numpy data, in one process (the strategy is built once, first, before any other TF op):
step s uses examples [s * G, (s + 1) * G) of the data (G = --global-batch); input
pipeline i of n reads the i-th of n equal parts of that batch, so two workers of batch
G / 2 see exactly the halves of a one-worker batch G (split again into `accumulation`
micro-batches). SGD has momentum 0, except with rules=1: a convolution stem and a Dense
"classifier", SGD momentum 0.9 with coupled L2 and the sources' learning-rate multipliers
(biases 2, first conv 5, classifier 3), at a tenth of the rate (stable, so float rounding is
not amplified). With distill=1 the student learns from a frozen tiny teacher of another
feature width (actrec.train.distillation.loss: through a projection, checkpointed) on a second
input of the same examples. After the steps the trainer
synchronizes and evaluates; each worker writes DIR/NAME-worker{I}.npz (the model's
variables, in order) and DIR/NAME-worker{I}.json (counts, losses, evaluation).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
from actrec.cluster.optional_imports import decline_optional_imports

decline_optional_imports()  # as an `actrec train` worker starts
SCENARIO_DEFAULTS = {
    "sync": "allreduce",
    "k": "1",
    "optimizer": "sgd",
    "bn": "0",
    "precision": "none",
    "accumulation": "1",
    "rules": "0",
    "distill": "0",
}


def arguments():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--global-batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument(
        "--scenario",
        action="append",
        default=[],
        help="comma-separated key=value settings, e.g. name=kavg4,sync=kavg,k=4",
    )
    parser.add_argument("--crash-worker", type=int, default=None)
    parser.add_argument("--crash-at-step", type=int, default=1)
    parser.add_argument("--collective-timeout", type=float, default=60.0)
    parser.add_argument("--peer-timeout", type=float, default=None)
    return parser.parse_args()


def heartbeat_timeout_ms() -> int | None:
    """The coordination service's heartbeat timeout this process runs with (0: TensorFlow's
    default); None without a coordination service."""
    from tensorflow.python.eager import context

    config = context.context().coordination_service
    return None if config is None else int(config.heartbeat_timeout_in_ms)


def main() -> int:
    args = arguments()
    from actrec.cluster.strategy import build_strategy, worker_index

    # First: multi-worker collectives must be configured before any TensorFlow op.
    strategy = build_strategy(
        "auto", "ring", timeout_seconds=args.collective_timeout, peer_timeout=args.peer_timeout
    )
    import keras
    import numpy as np
    import tensorflow as tf

    from actrec.config.recipe import TrainConfig
    from actrec.train.loop.trainer import DistributedTrainer

    tf.config.experimental.enable_op_determinism()
    worker = worker_index(strategy)
    rng = np.random.default_rng(1234)
    num_examples = args.global_batch * args.steps
    clips = rng.normal(size=(num_examples, 6, 6, 2)).astype("float32")
    labels = rng.integers(0, 3, size=num_examples).astype("int32")
    teacher_clips = rng.normal(size=(num_examples, 6, 6, 2)).astype("float32")

    def dataset_fn(context, distilled=False):
        part = args.global_batch // context.num_input_pipelines
        first = context.input_pipeline_id * part
        if distilled:  # ((student clips, teacher clips), labels)
            examples = tf.data.Dataset.from_tensor_slices(((clips, teacher_clips), labels))
            batches = examples.batch(args.global_batch)
            return batches.map(
                lambda x, y: (
                    (x[0][first : first + part], x[1][first : first + part]),
                    y[first : first + part],
                )
            )
        batches = tf.data.Dataset.from_tensor_slices((clips, labels)).batch(args.global_batch)
        return batches.map(lambda x, y: (x[first : first + part], y[first : first + part]))

    def segment_like(width: int, name: str):
        """A one-segment model shaped as actrec's segment models: pooled features [B, width]
        into the layer distillation reads them from, then the classifier."""
        from actrec.models.segment_model import POOLED_FEATURES_LAYER

        inputs = keras.Input((6, 6, 2))
        features = keras.layers.Dense(width, activation="tanh")(keras.layers.Flatten()(inputs))
        dropped = keras.layers.Dropout(0.0, name=POOLED_FEATURES_LAYER)(features)
        return keras.Model(inputs, keras.layers.Dense(3, name="classifier")(dropped), name=name)

    def teacher_builder():
        keras.utils.set_random_seed(11)  # the same frozen teacher on every worker
        return segment_like(5, "teacher")

    def evaluation_fn(context):
        # Workers read interleaved examples; 5 does not divide 48: partial batches.
        examples = tf.data.Dataset.from_tensor_slices((clips, labels))
        return examples.shard(context.num_input_pipelines, context.input_pipeline_id).batch(5)

    def model_builder(batch_norm: bool, rules: bool, distilled: bool = False):
        def build():
            if distilled:
                return segment_like(8, "student")
            layers = [keras.Input((6, 6, 2))]
            if rules:
                layers.append(keras.layers.Conv2D(4, 3, name="stem"))
            layers += [keras.layers.Flatten(), keras.layers.Dense(8, activation="tanh")]
            if batch_norm:
                layers.append(keras.layers.BatchNormalization())
            layers.append(keras.layers.Dense(3, name="classifier"))
            return keras.Sequential(layers)

        return build

    def train_config(settings: dict) -> TrainConfig:
        common = {
            "optimizer": settings["optimizer"],
            "clip_norm": None,
            "sync": settings["sync"],
            "kavg_steps": int(settings["k"]),
            "mixed_precision": settings["precision"],
        }
        if settings["rules"] != "1":
            return TrainConfig(**common, momentum=0.0, weight_decay=0.0)
        return TrainConfig(
            **common,
            momentum=0.9,
            weight_decay=0.01,
            weight_decay_mode="coupled",
            bias_lr_mult=2.0,
            first_conv_lr_mult=5.0,
            classifier_lr_mult=3.0,
        )

    args.out.mkdir(parents=True, exist_ok=True)
    for scenario in args.scenario:
        settings = {**SCENARIO_DEFAULTS, **dict(item.split("=") for item in scenario.split(","))}
        name = settings["name"]
        distilled = settings["distill"] == "1"
        distillation = None
        if distilled:
            from actrec.train.distillation.loss import DistillationSettings

            distillation = DistillationSettings(teacher_builder, 0.5, "clip", 1)
        trainer = DistributedTrainer(
            strategy,
            model_builder(settings["bn"] == "1", settings["rules"] == "1", distilled),
            train_config(settings),
            seed=7,
            distillation=distillation,
        )
        batches = iter(trainer.distribute(functools.partial(dataset_fn, distilled=distilled)))
        losses, feature_losses = [], []
        for step in range(args.steps):
            if worker == args.crash_worker and step == args.crash_at_step:
                print(f"worker {worker} crashes on purpose at step {step}", flush=True)
                return 3
            rate = 0.5 if step < args.steps // 2 else 0.25
            if settings["rules"] == "1":
                rate *= 0.1
            values = trainer.train_step(next(batches), rate, int(settings["accumulation"]))
            losses.append(values["loss"])
            feature_losses.append(values.get("feature_mse"))
        np.savez(
            args.out / f"{name}-worker{worker}-before-synchronize.npz",
            *[np.asarray(variable.value) for variable in trainer.trained_model.variables],
        )
        trainer.synchronize()
        evaluation = trainer.evaluate(trainer.distribute(evaluation_fn))
        evaluation["confusion"] = evaluation["confusion"].tolist()  # [K, K], for JSON
        np.savez(
            args.out / f"{name}-worker{worker}.npz",
            *[np.asarray(variable.value) for variable in trainer.trained_model.variables],
        )
        summary = {
            "num_all_reduces": trainer.num_all_reduces,
            "step": trainer.step,
            "num_traces": trainer.num_traces,
            "losses": losses,
            "feature_losses": feature_losses,
            "checkpoint_items": sorted(trainer.checkpoint_items()),
            "evaluation": evaluation,
            "replicas": trainer.num_replicas_in_sync,
            "heartbeat_timeout_ms": heartbeat_timeout_ms(),
        }
        (args.out / f"{name}-worker{worker}.json").write_text(json.dumps(summary))
        print(f"{name}: {summary}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
