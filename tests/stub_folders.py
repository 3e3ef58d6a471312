"""A working folder holding one folder of each kind actrec tells apart by the names of its
files (actrec_cli.folder_kinds), for the tests of argument mistakes: stubs, never read further."""

from __future__ import annotations

from pathlib import Path


def stub_folders(root: Path, files: tuple[str, ...] = ()) -> Path:
    """root with run/, export/, prepared/, raw/jump/v1.avi, empty/, and each of `files`
    (relative paths) as an empty file."""
    (root / "run").mkdir()
    (root / "run" / "run.json").write_text('{"classes": ["a"]}')
    (root / "run" / "recipe.yaml").write_text("name: x\n")
    (root / "export").mkdir()
    (root / "export" / "actrec.json").write_text("{}")
    (root / "export" / "recipe.yaml").write_text("name: x\n")
    (root / "prepared").mkdir()
    (root / "prepared" / "manifest.json").write_text("{}")
    (root / "raw" / "jump").mkdir(parents=True)
    (root / "raw" / "jump" / "v1.avi").write_bytes(b"")
    (root / "empty").mkdir()
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"")
    return root
