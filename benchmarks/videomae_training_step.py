"""actrec's VideoMAE training step against transformers' on eager PyTorch: same network,
batch, clips, optimiser and rates, one run, one machine.

    python benchmarks/videomae_training_step.py [--size b] [--batch 4] [--steps 5]
        [--threads N]

Both sides take VideoMAE's fine-tuning step without its augmentation: the forward pass in
training mode, cross-entropy, the backward pass and AdamW (weight decay 0.05 on weights
only, layer-wise rate decay 0.75, epsilon 1e-8), in float32, no drop path (transformers'
VideoMAE has none). actrec: `actrec.train.loop.trainer.DistributedTrainer` (one device,
the compiled step `actrec train` runs) on the Keras network; transformers:
VideoMAEForVideoClassification (its default attention, PyTorch's scaled_dot_product_attention)
with torch.optim.AdamW over VideoMAE's parameter groups (the authors' optim_factory rule on
transformers' names). Each side runs in its own process (one framework's idle thread pool
would slow the other's step). Prints one JSON line: the median seconds per step of each after two
warm-up steps, and ratio = transformers' / actrec's (>= 1: actrec's step is as fast or
faster; issue 68's goal). --size tiny checks that the script runs; the figures are timed
on an idle machine (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
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

from actrec.config.recipe import TrainConfig

LEARNING_RATE = 1e-4
SETTINGS = TrainConfig(
    optimizer="adamw",
    weight_decay_mode="decoupled",
    weight_decay=0.05,
    layer_decay=0.75,
    clip_norm=None,
)


def actrec_step_seconds(size, clips, labels, steps: int) -> float:
    import tensorflow as tf

    from actrec.backbones.videomae.build import videomae_classifier
    from actrec.cluster.strategy import build_strategy
    from actrec.train.loop.trainer import DistributedTrainer

    def network():
        return videomae_classifier(size.spec, 400, size.frames, (size.image, size.image))

    trainer = DistributedTrainer(build_strategy("one-device", environ={}), network, SETTINGS)
    dataset = tf.data.Dataset.from_tensors((clips, labels.astype("int32"))).repeat()
    batches = iter(trainer.distribute(lambda context: dataset))
    return median_seconds(lambda: trainer.train_step(next(batches), LEARNING_RATE), steps)


def layer_id(name: str, depth: int) -> int:
    """VideoMAE's get_num_layer_for_vit on transformers' parameter names."""
    if name.startswith("videomae.embeddings."):
        return 0
    if name.startswith("videomae.encoder.layer."):
        return int(name.split(".")[3]) + 1
    return depth + 1


def torch_parameter_groups(model, depth: int) -> list[dict]:
    """The authors' get_parameter_groups: no decay for 1-D parameters and biases, each
    layer's rate lr x 0.75 ** (depth + 1 - layer)."""
    groups: dict[tuple[int, bool], dict] = {}
    for name, parameter in model.named_parameters():
        decays = parameter.ndim > 1 and not name.endswith(".bias")
        layer = layer_id(name, depth)
        group = groups.setdefault(
            (layer, decays),
            {
                "params": [],
                "weight_decay": SETTINGS.weight_decay if decays else 0.0,
                "lr": LEARNING_RATE * SETTINGS.layer_decay ** (depth + 1 - layer),
            },
        )
        group["params"].append(parameter)
    return list(groups.values())


def transformers_step_seconds(size, clips, labels, steps: int) -> float:
    import torch

    model = transformers_classifier(size).train()
    optimizer = torch.optim.AdamW(
        torch_parameter_groups(model, size.spec.depth), betas=(0.9, 0.999), eps=1e-8
    )
    pixels = torch.from_numpy(channels_first(clips))
    targets = torch.from_numpy(labels)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(pixel_values=pixels).logits, targets)
        loss.backward()
        optimizer.step()

    return median_seconds(step, steps)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="b")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=5, help="timed steps (after 2 warm-up)")
    parser.add_argument("--threads", type=int, default=None, help="both sides' threads")
    parser.add_argument("--side", choices=("actrec", "transformers"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    size = SIZES[args.size]
    if args.side:  # one side, in this process: its seconds per step
        clips, labels = clips_and_labels(size, args.batch)
        if args.side == "actrec":
            if args.threads:
                import tensorflow as tf

                tf.config.threading.set_intra_op_parallelism_threads(args.threads)
            print(actrec_step_seconds(size, clips, labels, args.steps))
        else:
            if args.threads:
                import torch

                torch.set_num_threads(args.threads)
            print(transformers_step_seconds(size, clips, labels, args.steps))
        return 0
    forwarded = [a for a in sys.argv[1:] if a != "--side"] if argv is None else argv
    actrec_seconds, torch_seconds = (
        float(
            subprocess.run(
                [sys.executable, __file__, *forwarded, "--side", side],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()[-1]
        )
        for side in ("actrec", "transformers")
    )
    print(
        json.dumps(
            {
                "size": args.size,
                "batch": args.batch,
                "frames": size.frames,
                "image": size.image,
                "actrec_seconds_per_step": round(actrec_seconds, 4),
                "transformers_seconds_per_step": round(torch_seconds, 4),
                "ratio": round(torch_seconds / actrec_seconds, 3),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
