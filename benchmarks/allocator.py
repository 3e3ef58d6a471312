"""glibc malloc's default thresholds against ones that keep freed memory for the next step,
on the quickstart trainings (tried for issue 37 and not taken: docs/benchmarks.md).

    python benchmarks/allocator.py [--epochs 5] [--rounds 2] [--data PREPARED]
        [--intra-op-threads 1]

Trains `synthetic-flow` and `synthetic-tsm` for `--epochs` epochs of 32 steps (no
validation) in fresh processes, `--rounds` times each, alternating glibc's defaults and
KEPT (an mmap threshold of 32 MiB, glibc's largest, and a trim threshold of 1 GiB, set by
glibc's MALLOC_*_ variables: a freed tensor stays in the heap for the next step instead of
being handed back to the kernel and faulted in again), all in this run on this machine, and
prints each setting's median wall seconds, CPU seconds (user + system, from the child's
rusage) and minor page faults, and the ratios. The synthetic set is prepared in a
temporary folder unless `--data` gives one. `--intra-op-threads 1` trains as the test suite
does (TF_NUM_INTRAOP_THREADS=1: two trainings share the cores).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from synthetic_set import prepared_synthetic_set  # benchmarks/synthetic_set.py

RECIPES = ("synthetic-flow", "synthetic-tsm")
KEPT = {
    "MALLOC_MMAP_THRESHOLD_": str(32 * 1024 * 1024),
    "MALLOC_TRIM_THRESHOLD_": str(1024 * 1024 * 1024),
    "MALLOC_TOP_PAD_": str(64 * 1024 * 1024),
}
SETTINGS = {"glibc defaults": {}, "kept": KEPT}


def measured_training(prepared: Path, run_dir: Path, recipe: str, epochs: int, malloc: dict,
                      intra_op_threads: int | None) -> dict[str, float]:  # fmt: skip
    """{"wall", "cpu", "faults"} of one `actrec train` in a fresh process."""
    environment = {k: v for k, v in os.environ.items() if k not in KEPT}
    environment.update({"TF_CPP_MIN_LOG_LEVEL": "3", **malloc})
    if intra_op_threads is not None:
        environment["TF_NUM_INTRAOP_THREADS"] = str(intra_op_threads)
    command = [
        sys.executable, "-m", "actrec_cli.main", "train", "--recipe", recipe,
        "--data", str(prepared), "--workdir", str(run_dir),
        "--set", f"train.epochs={epochs}", "--set", "runtime.validate_every_epochs=0",
    ]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, env=environment, check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "faults": after.ru_minflt - before.ru_minflt}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5, help="epochs of 32 steps")
    parser.add_argument("--rounds", type=int, default=2, help="trainings per setting")
    parser.add_argument("--data", type=Path, help="a prepared synthetic set (default: make one)")
    parser.add_argument("--intra-op-threads", type=int, help="TF_NUM_INTRAOP_THREADS")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        prepared = arguments.data or prepared_synthetic_set(root)
        results = {(recipe, name): [] for recipe in RECIPES for name in SETTINGS}
        for round_index in range(arguments.rounds):
            for recipe in RECIPES:
                for name, malloc in SETTINGS.items():
                    run_dir = root / f"{recipe}-{'kept' if malloc else 'default'}-{round_index}"
                    results[recipe, name].append(
                        measured_training(
                            prepared,
                            run_dir,
                            recipe,
                            arguments.epochs,
                            malloc,
                            arguments.intra_op_threads,
                        )
                    )
    threads = arguments.intra_op_threads or "TensorFlow's default"
    print(
        f"{arguments.epochs} epochs of 32 steps, {arguments.rounds} rounds, {os.cpu_count()} "
        f"CPUs, intra-op threads: {threads}; medians"
    )
    for recipe in RECIPES:
        rows = {
            name: {key: statistics.median(r[key] for r in results[recipe, name]) for key in
                   ("wall", "cpu", "faults")}
            for name in SETTINGS
        }  # fmt: skip
        base = rows[next(iter(SETTINGS))]
        for name, row in rows.items():
            wall_ratio = base["wall"] / row["wall"]
            print(
                f"  {recipe:15} {name:15} wall {row['wall']:6.1f} s ({wall_ratio:4.2f}x)"
                f"  CPU {row['cpu']:6.1f} s ({base['cpu'] / row['cpu']:4.2f}x)"
                f"  page faults {row['faults'] / 1e6:5.2f} M"
            )


if __name__ == "__main__":
    main()
