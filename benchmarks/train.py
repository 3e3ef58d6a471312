"""Training throughput: the input pipeline, whether it starves training, 1 vs 2 workers.

    python benchmarks/train.py [--steps 20] [--backbone mobilenet_v2] [--crop 224]

Prepares a small synthetic set at 340x256 (the size real datasets are prepared at) in a
temporary folder, then prints, all measured in this run:
1. input-pipeline clips/s (training pipeline: decode, multi-scale crop, flip, batch);
2. training step time with the real pipeline divided by the step time on one batch held
   in memory (at or below 1.10: the pipeline does not starve training);
3. clips/s of 2 local workers (`actrec launch`-style, MultiWorkerMirroredStrategy) divided
   by 1 worker, same per-worker batch (on a 2-core machine expect about 1: the cores are
   shared; the point is that the collective adds little).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORKER = Path(__file__).resolve().parent / "train_worker.py"


def prepare_set(folder: Path) -> Path:
    from actrec.data.prepare.dataset import prepare_dataset
    from actrec.data.prepare.encode_video import PrepareSettings
    from actrec.data.sources import list_videos
    from actrec.data.synthetic.config import SyntheticConfig
    from actrec.data.synthetic.dataset import generate_synthetic_dataset

    generate_synthetic_dataset(folder / "raw", SyntheticConfig(videos_per_class=6, num_frames=24))
    out = folder / "prepared"
    prepare_dataset(
        list_videos("synthetic", folder / "raw"), out, PrepareSettings(frame_size="340x256")
    )
    return out


def run_workers(num_workers: int, arguments: list[str]) -> list[dict]:
    """Start the benchmark worker as `num_workers` local cluster workers; their JSON results."""
    from actrec.cluster.launch import launch_local_workers

    with tempfile.TemporaryDirectory() as folder:
        results = Path(folder)
        command = [sys.executable, str(WORKER), *arguments, "--results", str(results)]
        if num_workers == 1:
            code = subprocess.run(command, check=False).returncode
        else:
            code = launch_local_workers(num_workers, command, timeout=900, output=sys.stderr)
        if code != 0:
            raise SystemExit(f"benchmark worker failed with exit code {code}")
        return [json.loads(path.read_text()) for path in sorted(results.glob("*.json"))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=8, help="per-worker batch")
    parser.add_argument("--backbone", default="mobilenet_v2")
    parser.add_argument("--crop", type=int, default=224)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        prepared = prepare_set(Path(folder))
        common = [
            "--data",
            str(prepared),
            "--steps",
            str(arguments.steps),
            "--batch",
            str(arguments.batch),
            "--backbone",
            arguments.backbone,
            "--crop",
            str(arguments.crop),
        ]
        started = time.perf_counter()
        single = run_workers(1, [*common, "--measure-pipeline"])[0]
        double = run_workers(2, common)
        elapsed = time.perf_counter() - started
    print(
        f"backbone {arguments.backbone}, crop {arguments.crop}, 3 RGB segments, "
        f"batch {arguments.batch} per worker, {arguments.steps} timed steps ({elapsed:.0f} s)"
    )
    print(f"1. input pipeline: {single['pipeline_clips_per_second']:.1f} clips/s")
    ratio = single["step_seconds_pipeline"] / single["step_seconds_in_memory"]
    print(
        f"2. step time with the pipeline {single['step_seconds_pipeline']:.3f} s / "
        f"in memory {single['step_seconds_in_memory']:.3f} s = {ratio:.3f} "
        f"({'does not starve' if ratio <= 1.10 else 'STARVES'} training; target <= 1.10)"
    )
    two_workers = sum(result["clips_per_second"] for result in double)
    print(
        f"3. clips/s: 1 worker {single['clips_per_second']:.1f}, 2 workers {two_workers:.1f}, "
        f"ratio {two_workers / single['clips_per_second']:.2f}"
    )


if __name__ == "__main__":
    main()
