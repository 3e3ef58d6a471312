"""Forward throughput of TSM against TSN on the same backbone and input (clips/s ratio).

The temporal shift is meant to be free: TSM's clips/s must stay at or above 0.9 of TSN's.
Both models share their weights; runs alternate (TSN, TSM, TSN, ...) so that load on a
shared machine affects both alike, and the ratio uses the median time of each.

    python benchmarks/models.py                       # ResNet50, 8 segments, 224 px, CPU
    python benchmarks/models.py --size 112 --repeats 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")  # CPU, as the acceptance figure is


def parsed_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backbone", default="resnet50")
    parser.add_argument("--segments", type=int, default=8)
    parser.add_argument("--size", type=int, default=224, help="frame side in pixels")
    parser.add_argument("--batch", type=int, default=1, help="clips per forward pass")
    parser.add_argument("--repeats", type=int, default=7, help="timed passes per model")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--classes", type=int, default=101)
    parser.add_argument("--minimum-ratio", type=float, default=0.9)
    return parser.parse_args()


def main() -> int:
    arguments = parsed_arguments()
    import keras
    import numpy as np

    from actrec.models.segment_model import build_segment_model

    options = dict(num_segments=arguments.segments, input_size=arguments.size, weights=None)
    tsn = build_segment_model(arguments.backbone, arguments.classes, architecture="tsn", **options)
    tsm = build_segment_model(arguments.backbone, arguments.classes, architecture="tsm", **options)
    tsm.set_weights(tsn.get_weights())
    frames = (
        np.random.default_rng(0)
        .uniform(0, 255, (arguments.batch, arguments.segments, arguments.size, arguments.size, 3))
        .astype("float32")
    )  # [B, T, H, W, 3]

    for _ in range(arguments.warmup):
        tsn.predict_on_batch(frames)
        tsm.predict_on_batch(frames)
    seconds = {"tsn": [], "tsm": []}
    for _ in range(arguments.repeats):
        for name, model in (("tsn", tsn), ("tsm", tsm)):
            start = time.perf_counter()
            model.predict_on_batch(frames)
            seconds[name].append(time.perf_counter() - start)

    clips_per_second = {
        name: arguments.batch / statistics.median(times) for name, times in seconds.items()
    }
    ratio = clips_per_second["tsm"] / clips_per_second["tsn"]
    print(
        f"backend {keras.backend.backend()}, {arguments.backbone}, {arguments.segments} segments, "
        f"{arguments.size} px, batch {arguments.batch}, {arguments.repeats} timed passes each"
    )
    for name in ("tsn", "tsm"):
        print(
            f"{name.upper()}: {clips_per_second[name]:.3f} clips/s "
            f"(median {statistics.median(seconds[name]) * 1000:.0f} ms per batch)"
        )
    verdict = "ok" if ratio >= arguments.minimum_ratio else "BELOW"
    print(f"TSM / TSN clips/s ratio: {ratio:.3f} ({verdict}; minimum {arguments.minimum_ratio})")
    return 0 if ratio >= arguments.minimum_ratio else 1


if __name__ == "__main__":
    sys.exit(main())
