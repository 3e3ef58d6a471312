"""A streaming int8 TFLite against its float streaming model, frame by frame.

    python benchmarks/streaming_int8_agreement.py --run RUN [--out DIR]

RUN is a finished online TSM whose prepared data is still where it trained (e.g. a run of
benchmarks/online_from_bidirectional.py). Exports it `--streaming --format tflite` twice,
float32 and `--quantize int8` (which prints its accuracy gate), then streams every test
video of the run's data through both exactly as `actrec predict --stream` does (the same
frames, every fed frame) and prints: the frames compared, the share whose own top-1 (this
frame's logits) is the same in both, the share whose running top-1 (the mean of the last
num_segments frames) is the same, and the largest probability difference.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    from actrec.data.format.manifest import read_manifest
    from actrec.export.stream_predict import StreamingModel, stream_predictions
    from actrec.runs.trained import load_trained_run

    out = args.out or Path(tempfile.mkdtemp(prefix="actrec-int8-stream-"))
    out.mkdir(parents=True, exist_ok=True)
    models = [StreamingModel(exported(args.run, out, q)) for q in ("none", "int8")]
    manifest = read_manifest(load_trained_run(args.run).data_dir)
    videos = [v["path"] for v in manifest["videos"] if v["split"] == "test" and v["status"] == "ok"]
    same_frame = same_running = frames = 0
    largest = 0.0
    for video in videos:
        float_steps, int8_steps = (list(stream_predictions(m, video, top_k=8)) for m in models)
        for one, other in zip(float_steps, int8_steps, strict=True):
            frames += 1
            same_frame += one.frame_top_k[0][0] == other.frame_top_k[0][0]
            same_running += one.top_k[0][0] == other.top_k[0][0]
            probabilities = [dict(step.frame_top_k) for step in (one, other)]
            largest = max(
                largest,
                max(
                    abs(probabilities[0][name] - probabilities[1][name])
                    for name in probabilities[0]
                ),
            )
    print(
        f"{len(videos)} test videos, {frames} frames: this frame's top-1 the same in "
        f"{100 * same_frame / frames:.1f} %, the running top-1 in "
        f"{100 * same_running / frames:.1f} %; probabilities differ by up to {largest:.3f}"
    )


if __name__ == "__main__":
    main()
