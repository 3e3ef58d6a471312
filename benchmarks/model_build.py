"""How long a TSM backbone takes to build: its fused BatchNorm and its shifts in one rebuild
(what actrec.backbones.build.build_backbone does with an `edit`) against two (the fused
network rebuilt again by insert_temporal_shift, as before), CPU seconds of this process,
the two alternating, and whether both give the same initial weights from one seed.

    python benchmarks/model_build.py
    python benchmarks/model_build.py --backbones mobilenet_v2 resnet50 --size 224 --repeats 7
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backbones", nargs="+", default=["test_mobilenet_v2", "mobilenet_v2"])
    parser.add_argument("--size", type=int, default=48, help="frame side in pixels")
    parser.add_argument("--segments", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    import keras
    import numpy as np

    from actrec.backbones.build import build_backbone
    from actrec.backbones.registry import backbone_spec
    from actrec.models.temporal_shift import insert_temporal_shift, temporal_shift_transform

    def one_rebuild(spec):
        edit = lambda network: temporal_shift_transform(network, spec, args.segments)  # noqa: E731
        return build_backbone(spec, (args.size, args.size, 3), edit=edit)

    def two_rebuilds(spec):
        fused = build_backbone(spec, (args.size, args.size, 3))
        return insert_temporal_shift(fused, spec, args.segments)

    def digest(model) -> str:
        hashed = hashlib.sha256()
        for weight in model.weights:
            hashed.update(weight.path.encode() + np.asarray(weight.numpy()).tobytes())
        return hashed.hexdigest()[:12]

    print(f"| backbone ({args.size} px) | two rebuilds | one rebuild | ratio | same weights |")
    print("|---|---|---|---|---|")
    for name in args.backbones:
        spec = backbone_spec(name)
        digests = []
        for build in (two_rebuilds, one_rebuild):
            keras.utils.set_random_seed(0)
            digests.append(digest(build(spec)))
        seconds: dict = {two_rebuilds: [], one_rebuild: []}
        for _ in range(args.repeats):
            for build in seconds:
                started = time.process_time()
                build(spec)
                seconds[build].append(time.process_time() - started)
        two, one = (statistics.median(seconds[build]) for build in (two_rebuilds, one_rebuild))
        same = "yes" if digests[0] == digests[1] else "NO"
        print(f"| {name} | {two:.3f} s | {one:.3f} s | {two / one:.2f}x | {same} |", flush=True)


if __name__ == "__main__":
    main()
