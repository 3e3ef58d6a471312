"""actrec's MoViNet-A0 stream against the Model Garden's own TFLite export of the same
weights, and against actrec's TSM-MobileNetV2 stream: one frame a step on one core, in one
run.

    python benchmarks/movinet_stream_speed.py [--out DIR] [--rounds 5] [--repeats 50]
                                              [--model-id a0] [--image-size 172]

1. The Model Garden's side, in the reference environment (tf-models-official, made once by
   tests/movinet_reference.py): benchmarks/movinet_official_tflite.py builds its A0 stream
   (600 classes, every variable from the suite's seeded rule), writes its checkpoint and
   exports it as its README does (export_saved_model, then TFLiteConverter with no options).
2. actrec's side: `actrec pretrained convert` of that very checkpoint, then `actrec export
   --streaming --format tflite` in float32 and int8 (`--quantize int8`, calibrated on a
   synthetic set prepared at 256 px, with its accuracy gate); the TSM-MobileNetV2 stream at
   224 px (TSM's online demo layout, random weights, benchmarks/deploy_real_size.py's
   writer) the same way.
3. Parity: the official and actrec's float32 TFLite fed the same 8 frames from zero states
   (official: [0, 1]; actrec: 0-255, the crop it serves), the last logits compared.
4. Speed: each model in a fresh process (deploy_real_size.py's --measure: LiteRT, XNNPACK,
   1 thread, median of --repeats calls after a warm-up), the models in turn for --rounds
   rounds; the median over rounds and the ratio to the official float32.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tests"))
sys.path.insert(0, str(REPO_ROOT / "benchmarks"))

from deploy_real_size import ACTREC, calibration_set, measured_ms, run  # noqa: E402
from movinet_reference import reference_environment  # noqa: E402
from real_size_sources import checkpoints  # noqa: E402

OFFICIAL = REPO_ROOT / "benchmarks" / "movinet_official_tflite.py"


def official_export(out: Path, model_id: str, image_size: int) -> Path:
    """The Model Garden's checkpoint and TFLite file under out/official (made once)."""
    folder = out / "official"
    if not (folder / "official.tflite").is_file():
        env = reference_environment()
        environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
        command = [env / "bin" / "python", OFFICIAL, folder, "--model-id", model_id]
        command += ["--image-size", image_size]
        subprocess.run([str(c) for c in command], check=True, env=environment)
    tflite = out / "official-float32"
    tflite.mkdir(exist_ok=True)
    shutil.copyfile(folder / "official.tflite", tflite / "model.tflite")
    return folder


def converted(source: Path, run_dir: Path, log: Path) -> Path:
    command = [*ACTREC, "pretrained", "convert", source, "--out", run_dir]
    if not (run_dir / "run.json").is_file() and not run(command, log):
        sys.exit(f"`actrec pretrained convert {source}` failed: see {log}")
    return run_dir


def stream_exports(out: Path, name: str, run_dir: Path, calibration: Path) -> dict[str, Path]:
    """{label: folder} of the run's float32 and int8 streaming TFLite exports."""
    folders = {}
    for kind, options in (
        ("float32", []),
        ("int8", ["--quantize", "int8", "--calibration-data", calibration]),
    ):
        target = out / f"{name}-{kind}"
        if not target.exists():
            command = [*ACTREC, "export", run_dir, "--out", target, "--streaming"]
            if not run([*command, "--format", "tflite", *options], out / f"{target.name}.log"):
                print(f"{name} {kind}: export failed, see {target.name}.log", file=sys.stderr)
                continue
        folders[f"{name} {kind}"] = target
    return folders


def last_logits(tflite: Path, frames, scale: float, frame_axis: bool):
    """The logits after feeding `frames` [T, S, S, 3] in [0, 1] from zero states, each
    multiplied by `scale` and given a time axis when `frame_axis` (the Model Garden's
    [1, 1, S, S, 3]); states are fed back by name."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(model_path=str(tflite)).get_signature_runner()
    details = runner.get_input_details()
    image = "frame" if "frame" in details else "image"
    states = {n: np.zeros(d["shape"], d["dtype"]) for n, d in details.items() if n != image}
    outputs = {}
    for frame in frames:
        x = (frame * scale)[None]
        outputs = runner(**{image: x[:, None] if frame_axis else x}, **states)
        states = {name: outputs[name] for name in states}
    return np.asarray(outputs["logits"])[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="keep the files here (default: a temp dir)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--model-id", default="a0")
    parser.add_argument("--image-size", type=int, default=172)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="actrec-movinet-speed-"))
    out.mkdir(parents=True, exist_ok=True)
    import numpy as np

    official = official_export(out, args.model_id, args.image_size)
    name = f"actrec MoViNet-{args.model_id.upper()} stream"
    movinet_run = converted(official / "model" / "ckpt-1.index", out / "movinet-run", out / "c.log")
    tsm_file = checkpoints(out, ["mobilenet"])["TSM MobileNetV2 (online)"]
    tsm_run = converted(tsm_file, out / "tsm-run", out / "tsm-convert.log")
    calibration = calibration_set(out)
    folders = {"Model Garden MoViNet stream float32 (its TFLite export)": out / "official-float32"}
    folders.update(stream_exports(out, name, movinet_run, calibration))
    folders.update(
        stream_exports(out, "actrec TSM-MobileNetV2 stream (224 px)", tsm_run, calibration)
    )

    rng = np.random.default_rng(0)
    frames = rng.uniform(0, 1, (8, args.image_size, args.image_size, 3)).astype(np.float32)
    theirs = last_logits(out / "official-float32" / "model.tflite", frames, 1.0, True)
    ours = last_logits(folders[f"{name} float32"] / "model.tflite", frames, 255.0, False)
    print(f"logits after 8 frames: largest difference {np.abs(ours - theirs).max():.2e} "
          f"(logits' spread {np.ptp(theirs):.2f})", flush=True)  # fmt: skip

    times: dict[str, list[float]] = {label: [] for label in folders}
    for round_index in range(args.rounds):
        for label, folder in folders.items():
            times[label].append(measured_ms(folder, 1, args.repeats))
        print(f"round {round_index + 1}: " + ", ".join(
            f"{t[-1]:.2f}" for t in times.values()), file=sys.stderr, flush=True)  # fmt: skip
    baseline = statistics.median(times[next(iter(folders))])
    print(f"\n| model, one frame, 1 thread | ms (median of {args.rounds} rounds, range) | "
          "official float32 / this | size |")  # fmt: skip
    print("|---|---|---|---|")
    for label, values in times.items():
        middle = statistics.median(values)
        size = (folders[label] / "model.tflite").stat().st_size / 1e6
        print(f"| {label} | {middle:.2f} ({min(values):.2f}-{max(values):.2f}) | "
              f"{baseline / middle:.2f}x | {size:.1f} MB |")  # fmt: skip
    for label, folder in folders.items():
        metadata = folder / "actrec.json"
        quantization = (
            json.loads(metadata.read_text()).get("quantization") if metadata.is_file() else None
        )
        gate = (quantization or {}).get("gate")
        if gate:
            print(f"{label}: gate {gate['verdict']}, agreement {gate['agreement']:.3f} on "
                  f"{gate['clips']} clips")  # fmt: skip
    print(f"files: {out}")


if __name__ == "__main__":
    main()
