"""Hard swish in an int8 TFLite model: TFLite's fused HARD_SWISH against actrec's separate
ops (actrec.backbones.tflite_forms), and which ops a .tflite file leaves outside XNNPACK.

    python benchmarks/movinet_tflite_ops.py [--repeats 50] [--rounds 3]
    python benchmarks/movinet_tflite_ops.py --file EXPORT/model.tflite   # its ops outside XNNPACK

1. A stack of 12 convolutions (3x3 and 1x1, 16 and 32 channels, 86 x 86, each followed by
   MoViNet's hard swish, actrec.backbones.movinet.layers.hard_swish) converted to int8 twice,
   calibrated on the same 8 random inputs: as traced normally (the converter fuses each hard
   swish into HARD_SWISH) and inside `traced_for_tflite(int8=True)` (ADD and two MULs).
2. For each file: the ops LiteRT runs outside its XNNPACK delegate (each delegate
   partition's ops found from its outputs back to its inputs; the rest run in LiteRT's own
   kernels), and the median ms of one call on one thread, the two in turn for --rounds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from tflite_delegate import describe, median_call_ms  # benchmarks/tflite_delegate.py


def conv_stack_int8(separate: bool) -> bytes:
    """The int8 flatbuffer of the convolution stack, hard swish as traced (`separate`:
    inside traced_for_tflite(int8=True))."""
    import contextlib

    import numpy as np
    import tensorflow as tf

    from actrec.backbones.movinet.layers import hard_swish
    from actrec.backbones.tflite_forms import traced_for_tflite

    rng = np.random.default_rng(0)
    wide = tf.constant(rng.normal(0, 0.3, (3, 3, 16, 32)).astype("float32"))
    narrow = tf.constant(rng.normal(0, 0.3, (1, 1, 32, 16)).astype("float32"))

    @tf.function(input_signature=[tf.TensorSpec([1, 86, 86, 16], tf.float32)])
    def stack(x):
        for _ in range(6):
            x = hard_swish(tf.nn.conv2d(x, wide, 1, "SAME"))
            x = hard_swish(tf.nn.conv2d(x, narrow, 1, "SAME"))
        return {"y": x}

    def representative():
        calibration = np.random.default_rng(1)
        for _ in range(8):
            yield [calibration.normal(0, 1, (1, 86, 86, 16)).astype("float32")]

    with traced_for_tflite(int8=True) if separate else contextlib.nullcontext():
        function = stack.get_concrete_function()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([function], stack)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    return converter.convert()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, help="only list this .tflite file's ops outside")
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.file:
        describe(str(args.file), args.file)
        return
    folder = Path(tempfile.mkdtemp(prefix="actrec-hard-swish-"))
    files = {}
    for label, separate in (("fused HARD_SWISH", False), ("separate ops", True)):
        files[label] = folder / f"{'separate' if separate else 'fused'}.tflite"
        files[label].write_bytes(conv_stack_int8(separate))
        describe(label, files[label])
    times: dict[str, list[float]] = {label: [] for label in files}
    for _ in range(args.rounds):
        for label, path in files.items():
            times[label].append(median_call_ms(path, args.repeats))
    fused, separate = (statistics.median(values) for values in times.values())
    for label, values in times.items():
        print(f"{label}: {statistics.median(values):.2f} ms a call (1 thread)")
    print(f"separate ops / fused: {fused / separate:.2f}x faster")


if __name__ == "__main__":
    sys.exit(main())
