"""The wheel holds every package and data file of the source tree. pyproject.toml lists the
packages by hand, and an editable install (which reads the source tree) hides a package
missing from the list: only a built wheel shows it."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest
from repo_paths import REPO_ROOT

INSTALLED_AS = {"actrec": "actrec", "cli": "actrec_cli"}
"""Source folder -> the name it is installed as (pyproject.toml's package-dir)."""
DATA_FILES = ("actrec/recipes/**/*.yaml", "actrec/published/classes/*.txt")
"""The data files the library reads at run time (pyproject.toml's package-data)."""
BUILD_INPUTS = ("pyproject.toml", "README.md", *INSTALLED_AS)


def _setuptools_builds_wheels() -> bool:
    """setuptools >= 70.1 writes wheels itself; before, with the `wheel` package."""
    major, minor = (int(part) for part in version("setuptools").split(".")[:2])
    return (major, minor) >= (70, 1) or importlib.util.find_spec("wheel") is not None


def _in_wheel(source: Path) -> str:
    """The wheel's path of a source file (cli/x.py is actrec_cli/x.py)."""
    top, *rest = source.relative_to(REPO_ROOT).parts
    return "/".join([INSTALLED_AS[top], *rest])


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory) -> set[str]:
    """The file names in a wheel built offline (setuptools' PEP 517 backend, no build
    isolation) from a copy of the sources: a build in the checkout would leave build/
    there, and a stale build/lib would hide a package missing from the list."""
    if not _setuptools_builds_wheels():
        pytest.skip("this setuptools builds no wheels without the `wheel` package")
    folder = tmp_path_factory.mktemp("wheel")
    source = folder / "source"
    source.mkdir()
    ignored = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in BUILD_INPUTS:
        if (REPO_ROOT / name).is_dir():
            shutil.copytree(REPO_ROOT / name, source / name, ignore=ignored)
        else:
            shutil.copy2(REPO_ROOT / name, source / name)
    code = "import sys, setuptools.build_meta as b; print(b.build_wheel(sys.argv[1]))"
    built = subprocess.run(
        [sys.executable, "-c", code, str(folder / "dist")],
        cwd=source,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    wheel = folder / "dist" / built.stdout.strip().splitlines()[-1]
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def test_every_package_and_its_modules_are_in_the_wheel(wheel_names):
    packages = [
        init.parent
        for top in INSTALLED_AS
        for init in sorted((REPO_ROOT / top).rglob("__init__.py"))
        if "__pycache__" not in init.parts
    ]
    assert len(packages) > 10
    missing = [
        _in_wheel(module)
        for package in packages
        for module in sorted(package.glob("*.py"))
        if _in_wheel(module) not in wheel_names
    ]
    assert not missing, (
        f"not in the wheel: {missing}; add their packages to [tool.setuptools] packages in "
        "pyproject.toml"
    )


def test_every_data_file_is_in_the_wheel(wheel_names):
    data_files = [path for pattern in DATA_FILES for path in sorted(REPO_ROOT.glob(pattern))]
    assert any(path.match("recipes/sources/*.yaml") for path in data_files)
    assert any(path.match("published/classes/*.txt") for path in data_files)
    missing = [_in_wheel(path) for path in data_files if _in_wheel(path) not in wheel_names]
    assert not missing, (
        f"not in the wheel: {missing}; add them to [tool.setuptools.package-data] in pyproject.toml"
    )
