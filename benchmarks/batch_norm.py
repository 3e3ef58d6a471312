"""Training step with TensorFlow's fused BatchNorm kernel against Keras 3's BatchNormalization.

    python benchmarks/batch_norm.py [--backbone mobilenet_v2] [--size 48] [--frames 64]
                                    [--steps 20] [--rounds 3]

Builds the backbone twice, as Keras builds it (build_plain_backbone: Keras 3's
BatchNormalization, a dozen ops a layer) and as actrec trains it (build_backbone: the same
network, its BatchNormalization layers run FusedBatchNormV3 in training), each with a
classifier, and times one Adam training step on the same random batch held in memory
(--frames images, default the synthetic TSM recipe's 16 clips x 4 segments at 48 px), in
this process, the two alternating --rounds times. Prints the median wall and CPU seconds
(this process, all threads) of a step, the time to trace and run the first step, and the
ratios. One thread per op, as the test suite runs (TF_NUM_INTRAOP_THREADS=1); pass
TF_NUM_INTRAOP_THREADS=0 for TensorFlow's default.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")


def training_step(backbone_builder, name: str, size: int, frames: int, classes: int = 8):
    """(step function of no arguments, seconds to trace and run its first call)."""
    import keras
    import tensorflow as tf

    from actrec.backbones.registry import backbone_spec

    network = backbone_builder(backbone_spec(name), (size, size, 3))
    model = keras.Sequential([network, keras.layers.Dense(classes)])
    optimizer = keras.optimizers.Adam(1e-3)
    images = tf.random.stateless_uniform((frames, size, size, 3), seed=(0, 1))
    labels = tf.random.stateless_uniform((frames,), seed=(2, 3), maxval=classes, dtype=tf.int32)
    loss_function = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = loss_function(labels, model(images, training=True))
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        return loss

    start = time.perf_counter()
    step().numpy()
    return step, time.perf_counter() - start


def seconds_per_step(step, steps: int) -> tuple[float, float]:
    """(wall, CPU) seconds per call of `step`, over `steps` calls."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        step().numpy()
    return (time.perf_counter() - wall) / steps, (time.process_time() - cpu) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backbone", default="mobilenet_v2")
    parser.add_argument("--size", type=int, default=48)
    parser.add_argument("--frames", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()

    from actrec.backbones.build import build_backbone, build_plain_backbone

    builders = {"Keras BatchNormalization": build_plain_backbone, "fused kernel": build_backbone}
    steps, first = {}, {}
    for label, builder in builders.items():
        steps[label], first[label] = training_step(
            builder, arguments.backbone, arguments.size, arguments.frames
        )
    times = {label: [] for label in builders}
    for _ in range(arguments.rounds):
        for label, step in steps.items():
            times[label].append(seconds_per_step(step, arguments.steps))
    print(
        f"{arguments.backbone}, {arguments.frames} images of {arguments.size} px, one Adam "
        f"step, median of {arguments.rounds} x {arguments.steps} steps:"
    )
    medians = {}
    for label, measured in times.items():
        wall = statistics.median(w for w, _ in measured)
        cpu = statistics.median(c for _, c in measured)
        medians[label] = wall, cpu
        print(
            f"  {label}: {wall * 1000:.1f} ms a step, {cpu * 1000:.1f} ms CPU; "
            f"first step (tracing) {first[label]:.1f} s"
        )
    (keras_wall, keras_cpu), (fused_wall, fused_cpu) = medians.values()
    print(
        f"fused kernel: step {keras_wall / fused_wall:.2f}x faster, "
        f"{100 * (1 - fused_cpu / keras_cpu):.0f} % less CPU, "
        f"first step {first['Keras BatchNormalization'] / first['fused kernel']:.2f}x faster"
    )


if __name__ == "__main__":
    main()
