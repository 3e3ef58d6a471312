"""What the tests of refused artefacts share: the one line a refusal prints, and a video to
predict on."""

from __future__ import annotations

from pathlib import Path


def one_line(result) -> str:
    """The one non-empty line of a refused command's output (exit != 0, no traceback)."""
    assert result.exit_code != 0, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


def first_video(tiny_runs) -> Path:
    """A video of the tiny synthetic set the `tiny_runs` fixture trained on."""
    return next(Path(tiny_runs["raw"]).rglob("*.avi"))
