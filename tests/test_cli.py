"""The command line: fast help without TensorFlow, the version, the README/CI contract."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import tomllib
from conftest import REPO_ROOT, cli_output_with_heavy_modules

from actrec import __version__


def test_version(cli_runner):
    result = cli_runner("--version")
    assert result.exit_code == 0
    assert result.output.strip() == f"actrec, version {__version__}"


@pytest.mark.parametrize("arguments", [["--help"], ["prepare", "--help"], ["inspect", "--help"]])
def test_help_does_not_import_tensorflow_or_opencv(arguments):
    output = cli_output_with_heavy_modules(arguments)
    assert "Usage:" in output
    assert "HEAVY []" in output


def test_console_script_is_installed():
    executable = shutil.which("actrec")
    assert executable, "`actrec` is not on PATH: install with pip install -e ."
    result = subprocess.run([executable, "--version"], capture_output=True, text=True, check=True)
    assert __version__ in result.stdout


def test_ci_runs_exactly_the_readme_test_command():
    readme = (REPO_ROOT / "README.md").read_text()
    blocks = re.findall(
        r"<!-- test-command -->\n```bash\n(.*?)\n```\n<!-- /test-command -->", readme, re.S
    )
    assert blocks == ['pip install -e ".[test]" && python -m pytest']
    extracted = subprocess.run(
        [
            "bash",
            "-c",
            "sed -n '/<!-- test-command -->/,/<!-- \\/test-command -->/p' README.md"
            " | grep -v -e '<!--' -e '^```'",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO_ROOT,
    ).stdout.strip()
    assert extracted == blocks[0]
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    assert "<!-- test-command -->" in ci and "README.md" in ci


def test_every_package_folder_is_declared_in_pyproject():
    declared = set(
        tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(path.parent.relative_to(REPO_ROOT).parts)
        for path in (REPO_ROOT / "actrec").rglob("__init__.py")
    }
    found |= {
        "actrec_cli." + ".".join(path.parent.relative_to(REPO_ROOT / "cli").parts)
        for path in (REPO_ROOT / "cli").rglob("__init__.py")
        if path.parent != REPO_ROOT / "cli"
    }
    found.add("actrec_cli")
    assert found <= declared, f"add to pyproject.toml packages: {sorted(found - declared)}"
