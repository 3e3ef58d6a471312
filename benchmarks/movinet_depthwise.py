"""A MoViNet base network's depthwise 3D convolution on TensorFlow: actrec's (depthwise 2D
convolutions summed over the temporal taps, actrec.backbones.movinet.layers) against
Keras's grouped Conv3D (which Keras's TensorFlow backend runs in an XLA-compiled function
of its own), the same kernel and input: forward, and forward with the gradients of a
training step; median milliseconds, the two alternating, and their largest difference.

    python benchmarks/movinet_depthwise.py
    python benchmarks/movinet_depthwise.py --repeats 9
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SHAPES = (
    ("A0 block 1, 3x3x3, 80 channels", (1, 50, 22, 22, 80), (3, 3, 3)),
    ("A0 block 3, 5x3x3, 184 channels", (1, 50, 11, 11, 184), (5, 3, 3)),
)
"""MoViNet-A0 base bottlenecks on a 50-frame 172 px clip: (label, input, kernel)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    import keras
    import numpy as np
    import tensorflow as tf

    from actrec.backbones.movinet.layers import MovinetConv, same_padding

    print("| convolution | step | Keras grouped Conv3D | actrec | ratio | difference |")
    print("|---|---|---|---|---|---|")
    for label, shape, kernel in SHAPES:
        channels = shape[-1]
        ours = MovinetConv(channels, kernel, depthwise=True, batch_norm=False, name="ours")
        ours.build(shape)
        theirs = keras.layers.Conv3D(channels, kernel, groups=channels, use_bias=False)
        theirs.build(shape)
        theirs.kernel.assign(ours.conv.kernel)
        sides = zip(shape[1:4], kernel, strict=True)
        pads = [(0, 0), *(same_padding(size, k, 1) for size, k in sides), (0, 0)]
        networks = {  # the same SAME-padded convolution, each with its variables
            "keras": (_padded(theirs, pads), theirs.trainable_variables),
            "actrec": (ours, ours.trainable_variables),
        }
        clip = tf.constant(np.random.default_rng(0).normal(size=shape).astype("float32"))
        difference = float(tf.reduce_max(tf.abs(networks["keras"][0](clip) - ours(clip))))
        for step in ("forward", "forward + gradients"):
            functions = {
                name: tf.function(_forward(call) if step == "forward" else _step(call, weights))
                for name, (call, weights) in networks.items()
            }
            for function in functions.values():
                function(clip)  # trace and warm up
            times: dict = {name: [] for name in functions}
            for _ in range(args.repeats):
                for name, function in functions.items():
                    started = time.perf_counter()
                    np.asarray(function(clip)[0])
                    times[name].append(1000 * (time.perf_counter() - started))
            keras_ms, actrec_ms = (statistics.median(times[n]) for n in ("keras", "actrec"))
            print(
                f"| {label} | {step} | {keras_ms:.1f} ms | {actrec_ms:.1f} ms | "
                f"{keras_ms / actrec_ms:.1f}x | {difference:.1e} |",
                flush=True,
            )


def _padded(layer, pads):
    from keras import ops

    return lambda x: layer(ops.pad(x, pads))


def _forward(call):
    return lambda x: [call(x)]


def _step(call, weights):
    """The input's and the kernel's gradients of a sum of squares (a training step's)."""
    import tensorflow as tf

    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(call(x) ** 2)
        return tape.gradient(loss, [x, *weights])

    return step


if __name__ == "__main__":
    main()
