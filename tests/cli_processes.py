"""`actrec` run in a fresh interpreter: a training's command line, and which heavy
modules a command imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from repo_paths import REPO_ROOT


def train_command(recipe: str, prepared: Path, run_dir: Path, settings: list[str]) -> list[str]:
    """The `actrec train` command line (as a subprocess argv) with --set for each setting."""
    command = [
        sys.executable,
        "-m",
        "actrec_cli.main",
        "train",
        "--recipe",
        recipe,
        "--data",
        str(prepared),
        "--workdir",
        str(run_dir),
    ]
    for setting in settings:
        command += ["--set", setting]
    return command


def cli_output_with_heavy_modules(arguments: list[str]) -> str:
    """Run `actrec ARGUMENTS` in a fresh interpreter; its stdout ends with a line
    "HEAVY [...]" naming which of TensorFlow, Keras and OpenCV it imported."""
    code = (
        "import sys\n"
        "from actrec_cli.main import main\n"
        "try:\n"
        f"    main({arguments!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('HEAVY', sorted(m for m in ('tensorflow', 'keras', 'cv2') if m in sys.modules))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT
    ).stdout
