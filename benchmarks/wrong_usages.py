"""How fast an argument mistake is answered: each wrong usage of
tests/cli/test_cli_argument_checks.py in a fresh `actrec` process, against TensorFlow's
import alone (what every such answer waited for before it was answered first).

    python benchmarks/wrong_usages.py [--repeats 3]

Runs in a temporary folder holding one folder of each kind (the test's `folders`); prints
each usage's median wall time over --repeats, its exit status and first line, then the
slowest against `python -c "import tensorflow"` (same machine, same run) and `actrec --help`.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tests" / "cli"))
sys.path.insert(0, str(REPO_ROOT / "tests"))
from test_cli_argument_checks import TSM_FILE, USAGES  # noqa: E402


def working_folder() -> Path:
    """A folder with a run, an export, prepared data, raw videos, an empty folder and a
    downloaded checkpoint, by the names of their files (as the test makes them)."""
    folder = Path(tempfile.mkdtemp(prefix="actrec-usages-"))
    files = {
        "run/run.json": '{"classes": ["a"]}',
        "run/recipe.yaml": "name: x\n",
        "export/actrec.json": "{}",
        "export/recipe.yaml": "name: x\n",
        "prepared/manifest.json": "{}",
        "raw/jump/v1.avi": "",
        f"downloads/{TSM_FILE}": "",
    }
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    (folder / "empty").mkdir()
    return folder


def median_seconds(command: list[str], folder: Path, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = subprocess.run(command, cwd=folder, capture_output=True, text=True)
        times.append(time.perf_counter() - started)
    return sorted(times)[len(times) // 2], result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    actrec = shutil.which("actrec")
    folder = working_folder()
    avx512 = "avx512f" in Path("/proc/cpuinfo").read_text()
    print(
        f"CPU {'with' if avx512 else 'without'} AVX-512; median of {args.repeats} fresh processes"
    )
    slowest = 0.0
    for arguments, _ in USAGES:
        seconds, result = median_seconds([actrec, *arguments], folder, args.repeats)
        slowest = max(slowest, seconds)
        line = (result.stderr.strip().splitlines() or [""])[0]
        print(
            f"{seconds:5.2f} s  exit {result.returncode}  actrec {' '.join(arguments)}\n"
            f"         {line}"
        )
    tensorflow, _ = median_seconds(
        [sys.executable, "-c", "import tensorflow"], folder, args.repeats
    )
    help_seconds, _ = median_seconds([actrec, "--help"], folder, args.repeats)
    print(
        f"slowest answer {slowest:.2f} s; `actrec --help` {help_seconds:.2f} s; "
        f"`import tensorflow` alone {tensorflow:.2f} s (the slowest answer takes "
        f"{slowest / tensorflow:.2f}x of it)"
    )
    shutil.rmtree(folder)


if __name__ == "__main__":
    main()
