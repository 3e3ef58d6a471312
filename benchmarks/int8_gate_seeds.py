"""The int8 exports the README and the docs show, over training seeds: what the accuracy
gate measures and decides on each (issue 64).

    python benchmarks/int8_gate_seeds.py [--data PREPARED] [--workdir DIR] [--seeds 0 1 2]
                                         [--calibration-clips 64] [--out gate.json]

Trains `synthetic-tsm` and `synthetic-tsm-online` once per seed on the synthetic set (runs
already in --workdir are reused), then exports as the docs do: the TSM as an int8 TFLite
and an int8 ONNX clip model (docs/evaluation-and-export.md), the online TSM as an int8
streaming TFLite (the README's phone model). Each export's gate is measured (never refused
here) and printed, a row per export: the gate clips, both top-1s, the clips lost and gained
by int8, the agreement, the drop with its one-sided 95 % bounds, and the verdict of the
gate on its measured drop alone (before issue 64: refused above --max-drop 2) and of
actrec's gate (refused when the lower bound is above --max-drop). Without --data it
generates and prepares the synthetic set in --workdir. Says which CPU it ran on.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from synthetic_set import prepared_synthetic_set  # benchmarks/synthetic_set.py

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

RECIPES = ("synthetic-tsm", "synthetic-tsm-online")
EXPORTS = {
    "synthetic-tsm": (
        ("TFLite int8", {"model_format": "tflite"}),
        ("ONNX int8", {"model_format": "onnx"}),
    ),
    "synthetic-tsm-online": (
        ("streaming TFLite int8", {"model_format": "tflite", "streaming": True}),
    ),
}


def cpu_name() -> str:
    """The CPU's model name and whether it has AVX-512."""
    text = Path("/proc/cpuinfo").read_text()
    model = next(
        line.split(":", 1)[1].strip() for line in text.splitlines() if "model name" in line
    )
    return f"{model}, {'with' if 'avx512f' in text else 'without'} AVX-512"


def trained_run(recipe: str, prepared: Path, run_dir: Path, seed: int) -> Path:
    """run_dir, trained with `recipe` and runtime.seed=`seed` in a fresh process (reused)."""
    if (run_dir / "final.weights.h5").is_file():
        return run_dir
    command = [sys.executable, "-m", "actrec_cli.main", "train", "--recipe", recipe]
    command += ["--data", str(prepared), "--workdir", str(run_dir), "--set", f"runtime.seed={seed}"]
    with open(run_dir.parent / f"{run_dir.name}.log", "w") as log:
        if subprocess.run(command, stdout=log, stderr=subprocess.STDOUT).returncode != 0:
            raise SystemExit(f"{run_dir.name}: the training failed; see its .log")
    return run_dir


def measured_gate_entry(run_dir: Path, out: Path, calibration_clips: int, options) -> dict:
    """actrec.json's quantization.gate of `run_dir` exported int8 with `options`."""
    from actrec.export.metadata import read_export_metadata
    from actrec.export.quantization.quantized_export import QuantizationOptions
    from actrec.export.writer import export_runs

    if not (out / "actrec.json").is_file():
        measured = QuantizationOptions(calibration_clips=calibration_clips, max_drop=100.0)
        export_runs([run_dir], out, quantize="int8", quantization=measured, **options)
    return read_export_metadata(out)["quantization"]["gate"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--calibration-clips", type=int, default=64)
    parser.add_argument("--out", type=Path, help="write the rows as JSON")
    args = parser.parse_args()

    from actrec.evaluation.paired_difference import paired_difference
    from actrec.export.quantization.accuracy_gate import DEFAULT_CONFIDENCE, DEFAULT_MAX_DROP

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="actrec-int8-gate-"))
    workdir.mkdir(parents=True, exist_ok=True)
    prepared = args.data or workdir / "set" / "prepared"
    if not (prepared / "manifest.json").is_file():
        prepared = prepared_synthetic_set(workdir / "set")
    print(f"CPU: {cpu_name()}; gate: --max-drop {DEFAULT_MAX_DROP:g}, {DEFAULT_CONFIDENCE:.0%}")
    header = (
        f"{'run':<26} {'export':<22} {'clips':>5} {'float':>6} {'int8':>6} {'lost':>4} "
        f"{'gained':>6} {'agree':>6} {'drop':>5} {'bounds':>13}  {'measured drop':<13} actrec"
    )
    print(header)
    rows = []
    for seed in args.seeds:
        for recipe in RECIPES:
            run_dir = trained_run(recipe, prepared, workdir / f"{recipe}-s{seed}", seed)
            for name, options in EXPORTS[recipe]:
                folder = workdir / "exports" / f"{run_dir.name}-{name.replace(' ', '-')}"
                folder = folder.with_name(folder.name + f"-c{args.calibration_clips}")
                gate = measured_gate_entry(run_dir, folder, args.calibration_clips, options)
                bound = paired_difference(
                    gate["lost"], gate["gained"], gate["clips"], DEFAULT_CONFIDENCE
                )
                old = "refused" if gate["drop"] > DEFAULT_MAX_DROP else "passed"
                new = "refused" if 100 * bound.lower > DEFAULT_MAX_DROP else "passed"
                rows.append({"run": run_dir.name, "export": name, **gate, "old": old, "new": new})
                print(
                    f"{run_dir.name:<26} {name:<22} {gate['clips']:>5} "
                    f"{gate['float_top1']:>6.1%} {gate['quantized_top1']:>6.1%} "
                    f"{gate['lost']:>4} {gate['gained']:>6} {gate['agreement']:>6.1%} "
                    f"{gate['drop']:>5.1f} {100 * bound.lower:>6.1f}..{100 * bound.upper:<5.1f}"
                    f"  {old:<13} {new}",
                    flush=True,
                )
    drops = [row["drop"] for row in rows]
    print(
        f"{len(rows)} exports: drop {min(drops):.1f} to {max(drops):.1f} points; refused on the "
        f"measured drop: {sum(r['old'] == 'refused' for r in rows)}, by actrec's gate: "
        f"{sum(r['new'] == 'refused' for r in rows)}"
    )
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
