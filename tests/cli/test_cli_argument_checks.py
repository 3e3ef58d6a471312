"""An argument mistake is answered at once: refused before TensorFlow (or Keras) is imported,
in one line naming the fault and the fix, exit != 0, no traceback, nothing written.

Every usage runs in ONE fresh interpreter, one after the other, and the heavy modules are
listed after each: a usage that imported TensorFlow shows it from there on."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from stub_folders import stub_folders

TSM_FILE = "TSM_kinetics_RGB_resnet50_shift8_blockres_avg_segment8_e50.pth"

USAGES = [
    # (arguments, what the one line says)
    (["train", "--recipe", "nope", "--data", "x", "--workdir", "y"], "unknown recipe 'nope'"),
    (
        ["train", "--recipe", "tsn-rgb-ucf", "--data", "prepared", "--workdir", "runs/a"],
        "(did you mean tsn-rgb-ucf101?)",
    ),
    (["predict", "a.avi", "--model", "nofolder"], "nofolder: no such folder"),
    (["eval", "nofolder"], "nofolder: no such folder; eval takes a run folder"),
    (["export", "nofolder", "--out", "x"], "nofolder: no such folder; export takes a run folder"),
    (
        ["pretrained", "convert", "missing.pth", "--out", "runs/r"],
        "missing.pth: no such file; give the path of a PyTorch .pth file",
    ),
    (
        ["pretrained", "convert", TSM_FILE, "--out", "runs/tsm-kinetics400"],
        f"{TSM_FILE}: no such file; download it from "
        f"https://hanlab18.mit.edu/projects/tsm/models/{TSM_FILE}",
    ),
    (
        ["pretrained", "fetch", "resnet50-torchvision"],
        "unknown backbone 'resnet50-torchvision' (did you mean resnet50_torchvision?)",
    ),
    (
        ["pretrained", "import", f"downloads/{TSM_FILE}"],
        f"actrec pretrained convert downloads/{TSM_FILE} --out runs/NAME",
    ),
    # a newcomer's: raw videos as --data, eval of an export, export of prepared data,
    # predict with a run, --resume of an empty folder, the folders swapped
    (
        ["train", "--recipe", "synthetic-tsm", "--data", "raw", "--workdir", "runs/b"],
        "raw is a folder of videos that are not prepared, not prepared data; prepare them "
        "first (actrec prepare folder --root raw --out PREPARED)",
    ),
    (["eval", "export"], "export is an export folder (the --out of `actrec export`), not a run"),
    (
        ["export", "prepared", "--out", "exports/x"],
        "prepared is a prepared data folder (the --out of `actrec prepare`), not a run; train "
        "on it first",
    ),
    (
        ["predict", "a.avi", "--model", "run"],
        "run is a run folder (the --workdir of `actrec train`), not an export; export it "
        "first (actrec export run --out EXPORT)",
    ),
    (
        ["train", "--resume", "--data", "prepared", "--workdir", "empty"],
        "--resume: empty holds no run to resume; give --recipe NAME",
    ),
    (
        ["train", "--recipe", "synthetic-tsm", "--data", "run", "--workdir", "prepared"],
        "run is a run folder (the --workdir of `actrec train`), not prepared data",
    ),
    (
        ["train", "--recipe", "synthetic-tsm", "--data", "prepared", "--workdir", "export"],
        "--workdir export is an export folder (the --out of `actrec export`); give a new folder",
    ),
    (
        ["predict", "a.avi", "b.avi", "--model", "export"],
        "none of the 2 videos exists (a.avi, b.avi)",
    ),
    (
        [
            *("predict", "raw/jump/v1.avi", "--model", "export", "--timeline"),
            *("--csv", "run/recipe.yaml/t.csv"),
        ],
        "run/recipe.yaml is a file; give another --csv",
    ),
    (
        ["prepare", "folder", "--root", "my-videos", "--out", "prepared/mine"],
        "dataset root my-videos does not exist",
    ),
    (
        ["prepare", "folder", "--root", "raw", "--out", "run/recipe.yaml/mine"],
        "run/recipe.yaml is a file, not a folder (run/recipe.yaml/mine); give another --out",
    ),
    (
        ["prepare", "folder", "--root", "empty", "--out", "prepared/mine"],
        "no videos found in empty (no class folders)",
    ),
]

_RUNNER = """
import json, sys, time
from click.testing import CliRunner
from actrec_cli.main import main

answers = []
for arguments in json.loads(sys.argv[1]):
    started = time.monotonic()
    result = CliRunner().invoke(main, arguments)
    answers.append({
        "seconds": time.monotonic() - started,
        "exit_code": result.exit_code,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "exception": None if isinstance(result.exception, SystemExit) else repr(result.exception),
        "heavy": sorted(m for m in ("tensorflow", "keras") if m in sys.modules),
    })
print(json.dumps(answers))
"""


@pytest.fixture
def folders(tmp_path):
    """A working folder holding one folder of each kind, by the names of their files."""
    return stub_folders(tmp_path, (f"downloads/{TSM_FILE}",))


def answers(arguments: list[list[str]], cwd) -> list[dict]:
    output = subprocess.run(
        [sys.executable, "-c", _RUNNER, json.dumps(arguments)],
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
    ).stdout
    return json.loads(output.splitlines()[-1])


def test_argument_mistakes_are_refused_in_one_line_before_tensorflow(folders):
    before = sorted(path.name for path in folders.iterdir())
    replies = answers([arguments for arguments, _ in USAGES], folders)
    for (arguments, expected), reply in zip(USAGES, replies, strict=True):
        shown = " ".join(arguments)
        assert reply["exit_code"] not in (0, None), shown
        assert reply["exception"] is None, (shown, reply["exception"])
        lines = reply["stderr"].splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (shown, reply["stderr"])
        assert "Traceback" not in reply["stderr"] + reply["stdout"], shown
        assert expected in lines[0], (shown, lines[0])
        assert reply["heavy"] == [], (shown, "imported", reply["heavy"])
    # nothing written for a refused command: no runs/, exports/, x/, y/
    assert sorted(path.name for path in folders.iterdir()) == before
    assert sorted(path.name for path in (folders / "empty").iterdir()) == []


def test_an_empty_folder_to_prepare_is_answered_within_a_second(folders):
    """The first command of a fresh interpreter (what `actrec prepare folder` imports is
    timed, the CLI's own modules are not): the folder is listed before TensorFlow."""
    (reply,) = answers([["prepare", "folder", "--root", "empty", "--out", "prepared/x"]], folders)
    assert reply["exit_code"] == 1 and reply["heavy"] == [], reply
    assert reply["stderr"].startswith("error: no videos found in empty"), reply["stderr"]
    assert reply["seconds"] < 1, reply["seconds"]


def test_a_wrong_choice_is_clicks_usage_error_before_tensorflow(folders):
    (reply,) = answers([["eval", "run", "--protocol", "nope"]], folders)
    assert reply["exit_code"] == 2
    assert "Invalid value for '--protocol': 'nope' is not one of" in reply["stderr"]
    assert "Traceback" not in reply["stderr"]
    assert reply["heavy"] == []


def test_an_output_through_a_file_is_refused_before_tensorflow(folders):
    (reply,) = answers([["eval", "run", "--out", "run/recipe.yaml/x"]], folders)
    assert reply["exit_code"] == 1 and reply["heavy"] == []
    assert reply["stderr"].strip() == (
        "error: run/recipe.yaml is a file, not a folder (run/recipe.yaml/x); give another --out"
    )


def test_folder_kinds_and_the_parents_a_command_creates(folders):
    from actrec_cli.folder_kinds import folder_kind

    from actrec.files.output_paths import create_parents, remove_created_parents

    kinds = {name: folder_kind(folders / name) for name in ("run", "export", "prepared", "raw")}
    assert kinds == {"run": "run", "export": "export", "prepared": "prepared", "raw": "videos"}
    assert folder_kind(folders / "empty") == "empty" and folder_kind(folders / "none") is None
    created = create_parents(folders / "runs" / "a" / "run")
    assert created == [folders / "runs", folders / "runs" / "a"]
    assert (folders / "runs" / "a").is_dir() and not (folders / "runs" / "a" / "run").exists()
    remove_created_parents(created)  # what a failed command made is removed
    assert not (folders / "runs").exists()
