"""Where the tests find the checkout and their committed files."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
"""The checkout's root (pyproject.toml, README.md, docs/, benchmarks/)."""
TEST_DATA = Path(__file__).resolve().parent / "assets"
"""tests/assets/: real clips and the official UCF101 split files."""
