"""Memory: peak memory and step time with and without rematerialisation, and the table
`actrec train --batch-size auto` chooses its batch from.

    python benchmarks/memory.py [--backbone resnet50] [--crop 112] [--segments 2] [--batch 8]
                                [--auto-backbone mobilenet_v3_small] [--auto-crop 112]
                                [--auto-segments 8] [--budget SIZE] [--max-batch 8]
                                [--steps 2] [--skip-remat] [--skip-auto]

Every number is measured in this run, each training step in a fresh process (see
actrec.train.memory: the peak is the probe process's peak resident memory on CPU, the
allocator peak on GPU), with random weights and a synthetic batch:

1. Rematerialisation: one TSN model (default ResNet50, 2 segments of 112 px, 8 clips per
   step, SGD) without and with `model.remat`; peak memory, step time and their ratios
   (with / without), and how the backbone was split.
2. Automatic batch size: the probes `--batch-size auto` runs for a small model (default
   MobileNetV3-Small, 8 segments of 112 px: each clip adds tens of MiB) under a budget (default:
   the measured peak of batch 1 plus 150 MiB), the step-time model and the chosen batch.

About 2 minutes on 2 CPU cores (each probe starts TensorFlow and traces the step).
"""

from __future__ import annotations

import argparse
import dataclasses
import time


def _recipe(backbone: str, crop: int, segments: int, remat: bool = False):
    from actrec.config.files import load_recipe
    from actrec.config.overrides import apply_overrides

    return apply_overrides(
        load_recipe("synthetic-rgb"),
        [
            f"model.backbone={backbone}",
            f"data.crop_size={crop}",
            f"data.num_segments={segments}",
            "train.optimizer=sgd",
            f"model.remat={str(remat).lower()}",
        ],
    )


def remat_comparison(arguments) -> None:
    from actrec.models.remat import describe_plan
    from actrec.models.segment_model import build_segment_model, segment_backbone
    from actrec.train.memory.probe import probe_batch
    from actrec.train.memory.units import format_bytes

    model = build_segment_model(
        arguments.backbone,
        8,
        num_segments=arguments.segments,
        input_size=arguments.crop,
        weights=None,
        remat=True,
    )
    plan = describe_plan(segment_backbone(model))
    del model
    results = {}
    for remat in (False, True):
        recipe = _recipe(arguments.backbone, arguments.crop, arguments.segments, remat)
        results[remat] = probe_batch(recipe, 8, arguments.batch, steps=arguments.steps)
    plain, remat = results[False], results[True]
    frames = arguments.batch * arguments.segments
    print(
        f"\n1. rematerialisation: {arguments.backbone}, {arguments.batch} clips x "
        f"{arguments.segments} segments of {arguments.crop} px ({frames} frames) per step, SGD"
    )
    print(f"   backbone split: {plan}")
    print(f"   {'':16}{'peak memory':>14}{'step time':>12}")
    print(
        f"   {'without remat':16}{format_bytes(plain.peak_bytes):>14}{plain.step_seconds:>10.3f} s"
    )
    print(f"   {'with remat':16}{format_bytes(remat.peak_bytes):>14}{remat.step_seconds:>10.3f} s")
    print(
        f"   {'with / without':16}{remat.peak_bytes / plain.peak_bytes:>14.3f}"
        f"{remat.step_seconds / plain.step_seconds:>12.3f}"
    )
    saved = plain.peak_bytes - remat.peak_bytes
    print(
        f"   remat saves {format_bytes(saved)} of peak ({format_bytes(saved / frames)} per "
        f"frame) for {100 * (remat.step_seconds / plain.step_seconds - 1):.0f}% more step time"
    )


def auto_table(arguments) -> None:
    from actrec.train.memory.choose import choose_batch
    from actrec.train.memory.probe import probe_batch
    from actrec.train.memory.recipe_edits import with_batch_size
    from actrec.train.memory.units import MIB, format_bytes, parse_memory_size

    recipe = with_batch_size(
        _recipe(arguments.auto_backbone, arguments.auto_crop, arguments.auto_segments), "auto"
    )
    measured = {}
    budget = None if arguments.budget is None else parse_memory_size(arguments.budget)
    if budget is None:  # a budget this machine can hold a few clips in
        measured[1] = probe_batch(recipe, 8, 1, steps=arguments.steps)
        budget = measured[1].peak_bytes + 150 * MIB

    def probe(recipe, num_classes, batch, *, budget_bytes, device, steps):
        if batch in measured:  # batch 1 was measured (without a budget) to set the budget
            result = measured.pop(batch)
            fits = result.peak_bytes <= budget_bytes
            return dataclasses.replace(
                result, fits=fits, reason="" if fits else "over budget",
                step_seconds=result.step_seconds if fits else None,
            )  # fmt: skip
        return probe_batch(
            recipe, num_classes, batch, budget_bytes=budget_bytes, device=device, steps=steps
        )

    decision = choose_batch(
        recipe,
        8,
        budget_bytes=budget,
        device="cpu",
        max_batch=arguments.max_batch,
        steps=arguments.steps,
        probe=probe,
    )
    print(
        f"\n2. --batch-size auto: {arguments.auto_backbone}, {arguments.auto_segments} "
        f"segments of {arguments.auto_crop} px, budget {format_bytes(budget)} "
        f"(probes took {decision.probe_seconds:.0f} s)"
    )
    print(f"   {'batch':>5} {'peak':>10} {'fits':<18}{'step ms':>9}{'model ms':>9}{'clips/s':>9}")
    for row in decision.rows():
        step = "-" if row["step_ms"] is None else f"{row['step_ms']:.1f}"
        model = "-" if row["model_ms"] is None else f"{row['model_ms']:.1f}"
        rate = "-" if row["clips_per_second"] is None else f"{row['clips_per_second']:.1f}"
        mark = "  <- chosen" if row["chosen"] else ""
        cells = f"{row['batch']:>5} {row['peak']:>10} {row['fits']:<18}"
        print(f"   {cells}{step:>9}{model:>9}{rate:>9}{mark}")
    print(f"   chosen: {decision.summary()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backbone", default="resnet50")
    parser.add_argument("--crop", type=int, default=112)
    parser.add_argument("--segments", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8, help="clips per step (remat part)")
    parser.add_argument("--auto-backbone", default="mobilenet_v3_small")
    parser.add_argument("--auto-crop", type=int, default=112)
    parser.add_argument("--auto-segments", type=int, default=8)
    parser.add_argument("--budget", default=None, help="e.g. 1.2GiB (default: batch 1 + 150 MiB)")
    parser.add_argument("--max-batch", type=int, default=8, help="largest batch probed")
    parser.add_argument("--steps", type=int, default=2, help="timed steps per probe")
    parser.add_argument("--skip-remat", action="store_true")
    parser.add_argument("--skip-auto", action="store_true")
    arguments = parser.parse_args()
    started = time.perf_counter()
    if not arguments.skip_remat:
        remat_comparison(arguments)
    if not arguments.skip_auto:
        auto_table(arguments)
    print(f"\nbenchmark took {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
