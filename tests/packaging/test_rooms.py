"""The top of a package stays a short list (issue 66): actrec/ holds its __init__ and the two
modules every room uses (errors.py, progress.py), export/ at most 15 modules beside its
rooms (formats/, quantization/, trust/), running an export being actrec/predict/'s. A new
module where the list is full goes into the room it belongs to, or makes one."""

from __future__ import annotations

from pathlib import Path

ACTREC = Path(__file__).resolve().parents[2] / "actrec"
MOST_MODULES_AT_THE_TOP = {"actrec": 3, "actrec/export": 15}


def modules_at_the_top(folder: Path) -> list[str]:
    """The names of the .py files directly in `folder` (its sub-packages aside)."""
    return sorted(path.name for path in folder.glob("*.py"))


def test_the_tops_of_actrec_and_export_stay_short():
    for folder, most in MOST_MODULES_AT_THE_TOP.items():
        modules = modules_at_the_top(ACTREC.parent / folder)
        assert "__init__.py" in modules  # the folder is the package
        assert len(modules) <= most, f"{folder}/ holds {len(modules)} modules: {modules}"
