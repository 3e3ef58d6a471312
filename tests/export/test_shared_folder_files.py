"""A run or an export handed over is read only from inside its folder: a recipe whose
`extends:` names an outside file (absolute, `..`, `~`), a recipe or another file that is a
symlink leading out, are refused in one line that shows nothing of the outside file. A
recipe the user gives on the command line may still extend any path."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from actrec.config.files import load_folder_recipe, load_recipe
from actrec.errors import ConfigError

TOKEN = "SECRET-TOKEN-7f3c9a"
OUTSIDE_RECIPE = f"name: {TOKEN}\ntrain: {{{TOKEN}: 1}}\n"
"""An outside file whose every error would show the token (its name, an unknown key)."""


def _one_line(result) -> str:
    assert result.exit_code != 0, result.output
    assert "Traceback" not in result.output and TOKEN not in result.output, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.fixture
def outside(tmp_path) -> Path:
    path = tmp_path / "secret.yaml"
    path.write_text(OUTSIDE_RECIPE)
    return path


def _extending(folder: Path, name: str, parent: str) -> None:
    """`folder/name` made to extend `parent`, its own values kept."""
    text = (folder / name).read_text()
    (folder / name).write_text(f"extends: {parent}\n{text}")


@pytest.fixture
def parents(outside, monkeypatch) -> list[str]:
    """`outside` named from a folder beside it as an absolute, a `..` and a `~` path (HOME
    its folder)."""
    monkeypatch.setenv("HOME", str(outside.parent))
    return [str(outside), f"../{outside.name}", f"~/{outside.name}"]


def test_a_command_line_recipe_extends_any_path_a_folder_recipe_only_inside(tmp_path, parents):
    """The same file read as the user's own recipe and as a shared folder's: the first
    reads the outside file (its error shows the token), the second refuses to."""
    folder = tmp_path / "shared"
    folder.mkdir()
    (folder / "inside.yaml").write_text("extends: synthetic-rgb\ntrain: {epochs: 2}\n")
    (folder / "recipe.yaml").write_text("extends: inside.yaml\n")
    assert load_folder_recipe(folder, "recipe.yaml", "fix it").train.epochs == 2
    for parent in parents:
        (folder / "recipe.yaml").write_text(f"extends: {parent}\n")
        with pytest.raises(ConfigError, match="unknown key") as mine:
            load_recipe(folder / "recipe.yaml")
        assert TOKEN in str(mine.value)  # what a shared folder must not make actrec show
        with pytest.raises(ConfigError, match=r"inside the folder|leads outside") as shared:
            load_folder_recipe(folder, "recipe.yaml", "fix it")
        assert TOKEN not in str(shared.value) and "recipe.yaml's extends" in str(shared.value)


def test_an_export_recipe_extending_or_linking_outside_is_refused_by_predict(
    tiny_runs, tiny_exports, tmp_path, outside, parents, cli_runner
):
    video = next(Path(tiny_runs["raw"]).rglob("*.avi"))
    for index, parent in enumerate(parents):
        folder = tmp_path / f"extends-{index}"
        shutil.copytree(tiny_exports["rgb"], folder)
        _extending(folder, "recipe.yaml", parent)
        line = _one_line(cli_runner("predict", video, "--model", folder))
        assert "recipe.yaml's extends" in line and "export the model again" in line, line
    for linked in ("recipe.yaml", "saved_model.pb"):
        folder = tmp_path / f"linked-{linked}"
        shutil.copytree(tiny_exports["rgb"], folder)
        (folder / linked).unlink()
        (folder / linked).symlink_to(outside)
        line = _one_line(cli_runner("predict", video, "--model", folder))
        assert f"{folder / linked}: a link leading outside {folder}" in line, line


def test_a_run_recipe_extending_outside_is_refused_by_export(
    tiny_runs, tmp_path, outside, cli_runner
):
    run = tmp_path / "run"
    shutil.copytree(tiny_runs["rgb"], run)
    _extending(run, "recipe.yaml", f"../{outside.name}")
    line = _one_line(cli_runner("export", run, "--out", tmp_path / "export"))
    assert "recipe.yaml's extends leads outside" in line and "train the run again" in line
    assert not (tmp_path / "export").exists()
    (run / "recipe.yaml").unlink()
    (run / "recipe.yaml").symlink_to(outside)
    line = _one_line(cli_runner("export", run, "--out", tmp_path / "export"))
    assert "the recipe leads outside" in line, line
    assert not (tmp_path / "export").exists()
