"""Keras's own hard swish layers in an int8 TFLite model: keras.applications' MobileNetV3 as
TFLite converts Keras's trace (each hard swish fused into HARD_SWISH, which XNNPACK does not
run in int8) against actrec's conversion (actrec.export.tflite_flatbuffers.converted, the
layers traced as relu6(x + 3) * x / 6: actrec.backbones.keras_hard_swish).

    python benchmarks/int8_hard_swish.py [--sizes small large] [--image-size 224]
                                         [--repeats 50] [--rounds 3]

Each network (no top, global pooling and a 10-class classifier, random weights) first takes
its BatchNorm statistics from 16 random images (one training pass at momentum 0: a random
network's activations otherwise vanish, and their int8 scales with them, which no trained
network's do); both files are calibrated on the same 8 of them. Prints the ops each file
leaves outside XNNPACK, the median ms of one call on one thread (the files in turn for
--rounds), their ratio, and the largest difference between the two files' logits on the
same image, relative to the float model's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

import numpy as np
from tflite_delegate import describe, median_call_ms  # benchmarks/tflite_delegate.py

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def network(size: str, image_size: int):
    """(MobileNetV3 `size` with a classifier and its images' BatchNorm statistics, images)."""
    import keras

    from actrec.models.factory import nested_batch_normalization_layers

    constructor = {"small": keras.applications.MobileNetV3Small,
                   "large": keras.applications.MobileNetV3Large}[size]  # fmt: skip
    inputs = keras.Input((image_size, image_size, 3))
    backbone = constructor(
        input_shape=(image_size, image_size, 3), include_top=False, weights=None,
        pooling="avg", include_preprocessing=False,
    )  # fmt: skip
    model = keras.Model(inputs, keras.layers.Dense(10)(backbone(inputs)))
    images = np.random.default_rng(0).uniform(-1, 1, (16, image_size, image_size, 3))
    images = images.astype("float32")
    for norm in nested_batch_normalization_layers(model):
        norm.momentum = 0.0
    model(images, training=True)
    return model, images


def keras_trace_int8(model, signature, images) -> bytes:
    """TFLite's int8 conversion of Keras's own trace of `model` (variables frozen, as actrec
    freezes them), calibrated on `images`' first 8."""
    import tensorflow as tf

    holder = tf.Module()
    holder.model_variables = [variable.value for variable in model.variables]
    traced = tf.function(
        lambda image: {"logits": model(image, training=False)}, input_signature=signature
    ).get_concrete_function()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([traced], holder)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = lambda: ([image[None]] for image in images[:8])
    return converter.convert()


def logits(path: Path, image: np.ndarray) -> np.ndarray:
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path), num_threads=1)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], image[None])
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["small", "large"])
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="actrec-int8-hard-swish-"))
    for size in args.sizes:
        compare(size, args, folder)


def int8_files(size: str, image_size: int) -> tuple:
    """(the model, its images, {route: int8 flatbuffer}) of MobileNetV3 `size`."""
    import tensorflow as tf

    from actrec.export.tflite_flatbuffers import converted

    model, images = network(size, image_size)
    signature = [tf.TensorSpec((1, image_size, image_size, 3), tf.float32, "image")]
    ours = converted(
        lambda image: {"logits": model(image, training=False)},
        signature,
        [model],
        "int8",
        representative=lambda: ([image[None]] for image in images[:8]),
    )
    theirs = keras_trace_int8(model, signature, images)
    return model, images, {"Keras's trace (HARD_SWISH)": theirs, "actrec's (separate ops)": ours}


def compare(size: str, args, folder: Path) -> None:
    model, images, files = int8_files(size, args.image_size)
    paths = {}
    print(f"MobileNetV3-{size.capitalize()}, int8, {args.image_size} px:")
    for number, (label, flatbuffer) in enumerate(files.items()):
        paths[label] = folder / f"{size}-{number}.tflite"
        paths[label].write_bytes(flatbuffer)
        describe(f"  {label}", paths[label])
    times: dict[str, list[float]] = {label: [] for label in paths}
    for _ in range(args.rounds):
        for label, path in paths.items():
            times[label].append(median_call_ms(path, args.repeats))
    medians = {label: statistics.median(values) for label, values in times.items()}
    for label, median in medians.items():
        print(f"  {label}: {median:.2f} ms a call (1 thread)")
    expected = np.asarray(model(images[8:9], training=False))[0]
    scale = np.abs(expected).max()
    theirs, ours = (
        np.abs(logits(path, images[8]) - expected).max() / scale for path in paths.values()
    )
    keras_ms, actrec_ms = medians.values()
    print(
        f"  actrec's {keras_ms / actrec_ms:.2f}x faster; largest logit difference to the "
        f"float model, of its largest logit: Keras's trace {theirs:.3f}, actrec's {ours:.3f}"
    )


if __name__ == "__main__":
    main()
