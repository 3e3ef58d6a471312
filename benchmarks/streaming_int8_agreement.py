"""A streaming int8 TFLite against its float streaming model, frame by frame.

    python benchmarks/streaming_int8_agreement.py --run RUN [RUN ...] [--out DIR]
        [--baseline-quality 95]

RUN is a finished online TSM whose prepared data is still where it trained (e.g. a run of
benchmarks/online_from_bidirectional.py). Exports it `--streaming --format tflite` twice,
float32 and `--quantize int8` (which prints its accuracy gate), then streams every test
video of the run's data through both exactly as `actrec predict --stream` does (the same
frames, every fed frame) and prints: the frames compared, the share whose own top-1 (this
frame's logits) is the same in both, the share whose running top-1 (the mean of the last
num_segments frames) is the same, and the largest probability difference. The baseline,
on the same frames: the float model against itself when each frame is JPEG-encoded at
--baseline-quality instead of the export's quality (what `actrec prepare --jpeg-quality`
changes), a perturbation of the input no one would call a different model. One line per run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def exported(run: Path, out: Path, quantize: str) -> Path:
    folder = out / f"stream-{quantize}"
    if not folder.exists():
        command = [sys.executable, "-m", "actrec_cli.main", "export", str(run), "--out"]
        command += [str(folder), "--streaming", "--format", "tflite", "--quantize", quantize]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise SystemExit(result.stdout + result.stderr)
        gate = [line for line in result.stdout.splitlines() if "accuracy gate" in line]
        print(f"{quantize}: {gate[0] if gate else 'exported'}", flush=True)
    return folder


def top_ones(model, video: str) -> tuple[list, list, list]:
    """Per fed frame of `video` (a new stream): this frame's top-1, the running top-1, the
    probabilities."""
    from actrec.predict.stream import stream_predictions

    steps = list(stream_predictions(model, video, top_k=len(model.classes)))
    return (
        [step.frame_top_k[0][0] for step in steps],
        [step.top_k[0][0] for step in steps],
        [dict(step.frame_top_k) for step in steps],
    )


def agreement(run: Path, out: Path, baseline_quality: int) -> str:
    """The line `main` prints for one run (see the module)."""
    from actrec.data.format.manifest import read_manifest
    from actrec.predict.stream import StreamingModel
    from actrec.runs.trained import load_trained_run

    float_model, int8_model = (StreamingModel(exported(run, out, q)) for q in ("none", "int8"))
    baseline = StreamingModel(out / "stream-none")
    baseline.jpeg_quality = baseline_quality
    manifest = read_manifest(load_trained_run(run).data_dir)
    videos = [v["path"] for v in manifest["videos"] if v["split"] == "test" and v["status"] == "ok"]
    same_frame = same_running = same_baseline = frames = 0
    largest = 0.0
    for video in videos:
        frame_top, running_top, probabilities = top_ones(float_model, video)
        int8_frame_top, int8_running_top, int8_probabilities = top_ones(int8_model, video)
        frames += len(frame_top)
        same_frame += sum(a == b for a, b in zip(frame_top, int8_frame_top, strict=True))
        same_running += sum(a == b for a, b in zip(running_top, int8_running_top, strict=True))
        same_baseline += sum(
            a == b for a, b in zip(frame_top, top_ones(baseline, video)[0], strict=True)
        )
        for one, other in zip(probabilities, int8_probabilities, strict=True):
            largest = max(largest, max(abs(one[name] - other[name]) for name in one))
    return (
        f"{run.name}: {len(videos)} test videos, {frames} frames: int8's own top-1 the same in "
        f"{100 * same_frame / frames:.1f} %, the running top-1 in "
        f"{100 * same_running / frames:.1f} %; probabilities differ by up to {largest:.3f}. "
        f"Baseline: float32 at JPEG quality {baseline_quality} instead of "
        f"{float_model.jpeg_quality}, its own top-1 the same in "
        f"{100 * same_baseline / frames:.1f} %"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, nargs="+", required=True)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--baseline-quality", type=int, default=95)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="actrec-int8-stream-"))
    for run in args.run:
        folder = out / run.name if len(args.run) > 1 else out
        folder.mkdir(parents=True, exist_ok=True)
        print(agreement(run, folder, args.baseline_quality), flush=True)


if __name__ == "__main__":
    main()
