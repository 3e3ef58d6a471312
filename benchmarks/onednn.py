"""oneDNN or Eigen: what actrec's default TF_ENABLE_ONEDNN_OPTS=1 gains on CPUs where
TensorFlow would not turn oneDNN on (x86 CPUs without AVX512-VNNI / AVX-VNNI / AMX: AMD EPYC
before Zen 4, most laptops).

    python benchmarks/onednn.py [--epochs 2]

Prepares the synthetic set in a temporary folder, then trains the quickstart's RGB TSM
(`synthetic-tsm`, `--epochs` epochs of 32 steps, no validation) three times in fresh
processes, all measured in this run on this machine:
1. TF_ENABLE_ONEDNN_OPTS=0: Eigen kernels, TensorFlow's default on those CPUs;
2. TF_ENABLE_ONEDNN_OPTS=1: oneDNN, actrec's default everywhere on x86;
3. TF_ENABLE_ONEDNN_OPTS=1 with ONEDNN_MAX_CPU_ISA=AVX2: oneDNN limited to AVX2, what an
   AVX2-only CPU runs (on a CPU without AVX-512, 2 and 3 are the same).
and prints each training's seconds per step and the ratios to 1.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from synthetic_set import prepared_synthetic_set  # benchmarks/synthetic_set.py

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

SETTINGS = {
    "eigen (TF default without VNNI)": {"TF_ENABLE_ONEDNN_OPTS": "0"},
    "oneDNN (actrec default)": {"TF_ENABLE_ONEDNN_OPTS": "1"},
    "oneDNN, AVX2 only": {"TF_ENABLE_ONEDNN_OPTS": "1", "ONEDNN_MAX_CPU_ISA": "AVX2"},
}


def seconds_per_step(prepared: Path, run_dir: Path, epochs: int, settings: dict) -> float:
    """Wall seconds per training step of `actrec train` (process start and set-up excluded:
    the difference of an `epochs`-epoch and a 1-epoch run)."""
    times = []
    for count in (1, epochs + 1):
        environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
        for key in ("TF_ENABLE_ONEDNN_OPTS", "ONEDNN_MAX_CPU_ISA"):
            environment.pop(key, None)
        environment.update(settings)
        command = [
            sys.executable, "-m", "actrec_cli.main", "train", "--recipe", "synthetic-tsm",
            "--data", str(prepared), "--workdir", str(run_dir / f"epochs-{count}"),
            "--set", f"train.epochs={count}", "--set", "runtime.validate_every_epochs=0",
        ]  # fmt: skip
        start = time.perf_counter()
        subprocess.run(command, env=environment, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return (times[1] - times[0]) / (epochs * 32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2, help="measured epochs of 32 steps")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        prepared = prepared_synthetic_set(root)
        results = {}
        for index, (name, settings) in enumerate(SETTINGS.items()):
            results[name] = seconds_per_step(
                prepared, root / f"runs-{index}", arguments.epochs, settings
            )
    baseline = results[next(iter(SETTINGS))]
    print(f"synthetic-tsm, {arguments.epochs} x 32 steps, {os.cpu_count()} CPUs")
    for name, seconds in results.items():
        print(f"  {name:34} {1000 * seconds:7.1f} ms/step   {baseline / seconds:4.2f}x")


if __name__ == "__main__":
    main()
