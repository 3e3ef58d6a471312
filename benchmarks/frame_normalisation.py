"""What a per-channel frame normalisation costs in LiteRT: `(x - mean) / std` against the same
affine map as one [3, 3] matrix product (actrec.models.preprocessing.FramePreprocessing).

    python benchmarks/frame_normalisation.py [--repeats 200]

Three small models on a 224x224x3 frame in 0-255 (float input), each ending in the first
convolution of a MobileNetV2 (3x3, stride 2, 32 channels): no normalisation, the subtraction
and division by ImageNet's per-channel mean and std, and the matrix product plus bias;
each converted to TFLite float32 and int8 (calibrated on random frames) and timed in LiteRT
(its default CPU delegate, XNNPACK) on one thread, in turn in one process, median of
--repeats calls. Prints each time and what the normalisation adds over no normalisation.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

MEAN = (123.675, 116.28, 103.53)
STD = (58.395, 57.12, 57.375)


def functions() -> dict:
    import numpy as np
    import tensorflow as tf

    mean, std = np.array(MEAN, np.float32), np.array(STD, np.float32)
    kernel, bias = np.diag(1 / std).astype(np.float32), (-mean / std).astype(np.float32)
    weights = np.random.default_rng(0).normal(0, 0.1, (3, 3, 3, 32)).astype(np.float32)

    def first_convolution(frames):
        padded = tf.pad(frames, [[0, 0], [1, 1], [1, 1], [0, 0]])
        return tf.nn.relu6(tf.nn.conv2d(padded, weights, 2, "VALID"))

    def product(frames):
        rows = tf.matmul(tf.reshape(frames, [-1, 3]), kernel) + bias
        return first_convolution(tf.reshape(rows, tf.shape(frames)))

    return {
        "none": first_convolution,
        "subtract and divide": lambda frames: first_convolution((frames - mean) / std),
        "[3, 3] product": product,
    }


def converted(function, int8: bool) -> bytes:
    import numpy as np
    import tensorflow as tf

    spec = tf.TensorSpec([1, 224, 224, 3], tf.float32)
    concrete = tf.function(function, input_signature=[spec]).get_concrete_function()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([concrete])
    if int8:
        rng = np.random.default_rng(0)
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.representative_dataset = lambda: (
            [rng.uniform(0, 255, (1, 224, 224, 3)).astype(np.float32)] for _ in range(4)
        )
    return converter.convert()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    frame = np.random.default_rng(1).uniform(0, 255, (1, 224, 224, 3)).astype(np.float32)
    calls = {}
    for kind in ("float32", "int8"):
        for name, function in functions().items():
            interpreter = Interpreter(
                model_content=converted(function, kind == "int8"), num_threads=1
            )
            interpreter.allocate_tensors()
            index = interpreter.get_input_details()[0]["index"]

            def call(interpreter=interpreter, index=index):
                interpreter.set_tensor(index, frame)
                interpreter.invoke()

            calls[(kind, name)] = call
    times = {key: [] for key in calls}
    for call in calls.values():
        call()
    for _ in range(args.repeats):
        for key, call in calls.items():
            started = time.perf_counter()
            call()
            times[key].append(time.perf_counter() - started)
    medians = {key: 1000 * float(np.median(values)) for key, values in times.items()}
    for (kind, name), value in medians.items():
        added = value - medians[(kind, "none")]
        print(f"{kind:8} {name:20} {value:6.3f} ms  (normalisation: {added:+.3f} ms)")


if __name__ == "__main__":
    main()
