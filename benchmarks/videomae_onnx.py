"""actrec's ONNX Runtime inference of a VideoMAE against transformers' on eager PyTorch: one
network (transformers' random weights converted by actrec), batch and clips, one run.

    python benchmarks/videomae_onnx.py [--size b] [--batch 1] [--repeats 10] [--threads N]

transformers' VideoMAEForVideoClassification (eval mode, torch.no_grad, its default
attention) is saved in its own layout, converted as `actrec pretrained convert` does
(actrec.published.videomae_files, actrec.backbones.videomae.convert), written to ONNX by
actrec's export conversion (actrec.export.formats.onnx.converted: tf2onnx, opset 17) and
run by ONNX Runtime on the CPU. Prints one JSON line: the median seconds per batch of
each after two warm-up runs, the largest logit difference (the same network: within
1e-4), and ratio = PyTorch's / ONNX Runtime's (>= 1: actrec's ONNX model is as fast or
faster; issue 68's goal). --size tiny checks that the script runs; the figures are timed
on an idle machine (docs/benchmarks.md). Needs the onnx extra and the test extra's torch
and transformers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from videomae_networks import (
    SIZES,
    channels_first,
    clips_and_labels,
    median_seconds,
    transformers_classifier,
)

OPSET = 17


def converted_network(model, size):
    """actrec's Keras network of transformers' `model`, through its saved files."""
    from actrec.backbones.videomae.build import videomae_classifier
    from actrec.backbones.videomae.convert import assign_weights, source_weights
    from actrec.published.videomae_files import read_videomae_file

    with tempfile.TemporaryDirectory() as folder:
        model.save_pretrained(folder)
        path = Path(folder) / "model.safetensors"
        source = read_videomae_file(path)
        weights = source_weights(source.state_dict, path, source.config)
    network = videomae_classifier(
        weights.spec, weights.num_classes, size.frames, (size.image, size.image)
    )
    assign_weights(network, weights)
    return network


def onnx_session(network, size, threads: int | None):
    import onnxruntime
    import tensorflow as tf

    from actrec.export.formats.onnx import converted

    signature = [tf.TensorSpec([None, size.frames, size.image, size.image, 3], tf.float32)]
    model = converted(lambda clip: {"logits": network(clip, training=False)}, signature, OPSET)
    options = onnxruntime.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    return session, session.get_inputs()[0].name


def main(argv: list[str] | None = None) -> int:
    import numpy as np
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="b")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=10, help="timed runs (after 2 warm-up)")
    parser.add_argument("--threads", type=int, default=None, help="both sides' threads")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    size = SIZES[args.size]
    clips, _ = clips_and_labels(size, args.batch)
    model = transformers_classifier(size).eval()
    session, input_name = onnx_session(converted_network(model, size), size, args.threads)
    pixels = torch.from_numpy(channels_first(clips))

    def torch_logits():
        with torch.no_grad():
            return model(pixel_values=pixels).logits.numpy()

    def onnx_logits():
        return session.run(None, {input_name: clips})[0]

    difference = float(np.abs(onnx_logits() - torch_logits()).max())
    torch_seconds = median_seconds(torch_logits, args.repeats)
    onnx_seconds = median_seconds(onnx_logits, args.repeats)
    print(
        json.dumps(
            {
                "size": args.size,
                "batch": args.batch,
                "frames": size.frames,
                "image": size.image,
                "onnx_runtime_seconds": round(onnx_seconds, 4),
                "pytorch_seconds": round(torch_seconds, 4),
                "max_logit_difference": difference,
                "ratio": round(torch_seconds / onnx_seconds, 3),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
