"""The command line: fast help without TensorFlow, the version, the README/CI contract."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import tomllib
from cli_processes import cli_output_with_heavy_modules
from repo_paths import REPO_ROOT

from actrec import __version__


def test_version(cli_runner):
    result = cli_runner("--version")
    assert result.exit_code == 0
    assert result.output.strip() == f"actrec, version {__version__}"


@pytest.mark.parametrize(
    "arguments",
    [
        ["--help"],
        ["prepare", "--help"],
        ["inspect", "--help"],
        ["eval", "--help"],
        ["quickstart", "--help"],
    ],
)
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


# The distribution that provides each third-party module actrec imports.
DISTRIBUTION_OF_MODULE = {
    "cv2": "opencv-python-headless",
    "sklearn": "scikit-learn",
    "yaml": "pyyaml",
    "tensorflow": "tensorflow",
    "keras": "keras",
    "numpy": "numpy",
    "click": "click",
    "rich": "rich",
    "matplotlib": "matplotlib",
    "tensorboard": "tensorboard",
    "google": "protobuf",  # google.protobuf: reading saved_model.pb / model.onnx as data
}
OPTIONAL_DISTRIBUTION_OF_MODULE = {
    "torch": ("torch", "torch"),
    "tf2onnx": ("onnx", "tf2onnx"),
    "onnx": ("onnx", "onnx"),
    "onnxruntime": ("onnx", "onnxruntime"),
    "ai_edge_litert": ("litert", "ai-edge-litert"),
    "ray": ("ray", "ray"),
    "safetensors": ("videomae", "safetensors"),
}
"""Imports of an optional extra: module -> (extra, distribution). Imported inside the
functions that need them only, so that everything else runs without the extra."""


def test_every_third_party_import_is_a_declared_dependency():
    """A fresh `pip install -e .` must bring everything the library and the CLI import."""
    import ast
    import sys

    imported = set()
    for folder in ("actrec", "cli"):
        for path in (REPO_ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    imported |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    imported.add(node.module.split(".")[0])
    third_party = imported - set(sys.stdlib_module_names) - {"actrec", "actrec_cli", "__future__"}
    optional = third_party & set(OPTIONAL_DISTRIBUTION_OF_MODULE)
    third_party -= optional
    unknown = third_party - set(DISTRIBUTION_OF_MODULE)
    assert not unknown, f"add these imports to DISTRIBUTION_OF_MODULE and pyproject: {unknown}"
    declared = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=\[ ]", requirement)[0].lower() for requirement in declared}
    missing = {DISTRIBUTION_OF_MODULE[module] for module in third_party} - names
    assert not missing, f"pyproject.toml does not declare {missing}"
    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for module in optional:
        extra, distribution = OPTIONAL_DISTRIBUTION_OF_MODULE[module]
        assert any(item.startswith(distribution) for item in extras[extra]), (extra, module)


def test_optional_extras_are_imported_inside_functions_only():
    """`import torch` at a module's top would make every command need the extra."""
    import ast

    for folder in ("actrec", "cli"):
        for path in (REPO_ROOT / folder).rglob("*.py"):
            for node in ast.parse(path.read_text()).body:
                names = []
                if isinstance(node, ast.Import):
                    names = [alias.name.split(".")[0] for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    names = [node.module.split(".")[0]]
                assert not set(names) & set(OPTIONAL_DISTRIBUTION_OF_MODULE), path
