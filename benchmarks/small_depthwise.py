"""Depthwise filter gradients on inputs smaller than the kernel: TensorFlow's kernel against
actrec's SmallInputDepthwiseConv2D.

    python benchmarks/small_depthwise.py [--size 48] [--frames 64] [--steps 20] [--rounds 3]

Two measurements in this process, the variants alternating --rounds times:
1. The filter gradient alone, on the [64, H, W, C] inputs of MobileNetV2's stride-1
   depthwise layers that are smaller than their 3x3 kernel at --size px: TensorFlow's
   DepthwiseConv2dNativeBackpropFilter against actrec's `filter_gradient_by_taps`.
2. One Adam step of MobileNetV2 (--size px, --frames images held in memory, a classifier)
   built as actrec builds it (build_backbone) and the same with Keras' DepthwiseConv2D
   layers put back.
Prints the medians (wall and CPU seconds of this process) and the ratios. One thread per op,
as the test suite runs (TF_NUM_INTRAOP_THREADS=1); pass TF_NUM_INTRAOP_THREADS=0 for
TensorFlow's default.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")


def median_seconds(function, calls: int, rounds: int) -> tuple[float, float]:
    """(wall, CPU) median seconds of one call of `function` over `rounds` x `calls`."""
    walls, cpus = [], []
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(calls):
            function()
        walls.append((time.perf_counter() - wall) / calls)
        cpus.append((time.process_time() - cpu) / calls)
    return statistics.median(walls), statistics.median(cpus)


def filter_gradients(shape: tuple[int, int, int, int]):
    """{label: function of no arguments} computing the filter gradient for input `shape`."""
    import tensorflow as tf

    from actrec.models.small_depthwise import filter_gradient_by_taps

    x = tf.random.stateless_normal(shape, seed=(0, 1))
    dy = tf.random.stateless_normal(shape, seed=(2, 3))
    sizes = [3, 3, shape[-1], 1]

    def tensorflow_kernel():
        return tf.raw_ops.DepthwiseConv2dNativeBackpropFilter(
            input=x, filter_sizes=sizes, out_backprop=dy, strides=[1, 1, 1, 1], padding="SAME"
        )

    functions = {
        "TensorFlow's kernel": tf.function(tensorflow_kernel),
        "by taps": tf.function(lambda: filter_gradient_by_taps(x, dy, 3, 3)),
    }
    for function in functions.values():
        function()  # traced
    return functions


def training_steps(size: int, frames: int, classes: int = 8):
    """{label: step function of no arguments}: one Adam step of MobileNetV2 as actrec builds
    it, and with Keras' DepthwiseConv2D layers."""
    import keras
    import tensorflow as tf

    from actrec.models.backbones import build_backbone, build_plain_backbone
    from actrec.models.fused_batch_norm import FusedBatchNormalization

    def fused_batch_norm_only(layer):
        if type(layer) is keras.layers.BatchNormalization:
            return FusedBatchNormalization.from_config(layer.get_config())
        return layer

    shape = (size, size, 3)
    networks = {  # two networks of their own, the same but for the depthwise layers
        "Keras' DepthwiseConv2D": keras.models.clone_model(
            build_plain_backbone("mobilenet_v2", shape), clone_function=fused_batch_norm_only
        ),
        "actrec's": build_backbone("mobilenet_v2", shape),
    }
    images = tf.random.stateless_uniform((frames, size, size, 3), seed=(0, 1))
    labels = tf.random.stateless_uniform((frames,), seed=(2, 3), maxval=classes, dtype=tf.int32)
    loss_function = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    steps = {}
    for label, network in networks.items():
        model = keras.Sequential([network, keras.layers.Dense(classes)])
        optimizer = keras.optimizers.Adam(1e-3)

        def step(model=model, optimizer=optimizer):
            with tf.GradientTape() as tape:
                loss = loss_function(labels, model(images, training=True))
            gradients = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
            return loss

        steps[label] = tf.function(step)
        steps[label]()  # traced
    return steps


def small_depthwise_inputs(size: int, frames: int) -> list[tuple[int, int, int, int]]:
    """The input shapes of MobileNetV2's stride-1 depthwise layers smaller than 3x3."""
    import keras

    from actrec.models.backbones import build_plain_backbone

    network = build_plain_backbone("mobilenet_v2", (size, size, 3))
    shapes = set()
    for layer in network.layers:
        if isinstance(layer, keras.layers.DepthwiseConv2D) and tuple(layer.strides) == (1, 1):
            _, height, width, channels = layer.input.shape
            if height < 3 or width < 3:
                shapes.add((frames, height, width, channels))
    return sorted(shapes)


def compare(functions: dict, calls: int, rounds: int) -> dict[str, tuple[float, float]]:
    """{label: (wall, CPU)} medians, the functions alternating round by round."""
    measured = {label: ([], []) for label in functions}
    for _ in range(rounds):
        for label, function in functions.items():
            wall, cpu = median_seconds(function, calls, 1)
            measured[label][0].append(wall)
            measured[label][1].append(cpu)
    return {
        label: (statistics.median(walls), statistics.median(cpus))
        for label, (walls, cpus) in measured.items()
    }


def report(title: str, medians: dict[str, tuple[float, float]]) -> None:
    print(title)
    for label, (wall, cpu) in medians.items():
        print(f"  {label}: {wall * 1000:.2f} ms, {cpu * 1000:.2f} ms CPU")
    (base_wall, base_cpu), (new_wall, new_cpu) = medians.values()
    saved = 100 * (1 - new_cpu / base_cpu)
    print(f"  -> {base_wall / new_wall:.2f}x faster, {saved:.0f} % less CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=48)
    parser.add_argument("--frames", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()

    for shape in small_depthwise_inputs(arguments.size, arguments.frames):
        medians = compare(filter_gradients(shape), 5 * arguments.steps, arguments.rounds)
        report(f"filter gradient, input {list(shape)}:", medians)
    medians = compare(
        training_steps(arguments.size, arguments.frames), arguments.steps, arguments.rounds
    )
    report(f"MobileNetV2 training step, {arguments.frames} images of {arguments.size} px:", medians)


if __name__ == "__main__":
    main()
