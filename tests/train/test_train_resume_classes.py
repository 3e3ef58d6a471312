"""A resumed run meets its data: the classes must be those it trained on, in the same order
(its classifier's rows and the records' labels agree by index); a new run from it
(`--init-from`) matches them by name instead."""

from __future__ import annotations

import pytest

from actrec.cluster.strategy import ClusterInfo
from actrec.config.files import dump_recipe, load_recipe
from actrec.errors import ConfigError
from actrec.runs.record import RunRecord, write_run_record
from actrec.train.life.resume import open_run_directory

TRAINED = ["MoveLeft", "MoveRight", "ZoomIn"]


@pytest.fixture
def run_dir(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    dump_recipe(load_recipe("synthetic-rgb"), folder / "recipe.yaml")
    write_run_record(folder, RunRecord(classes=tuple(TRAINED)))
    return folder


def _open(run_dir, classes):
    chief = ClusterInfo(1, 0, True, "local")
    return open_run_directory(
        None, load_recipe("synthetic-rgb"), chief, run_dir, "latest", classes=classes
    )


def test_the_classes_it_trained_on_resume(run_dir):
    _, has_run, _ = _open(run_dir, TRAINED)
    assert has_run


def test_the_same_classes_in_another_order_are_refused_naming_a_moved_class(run_dir):
    with pytest.raises(ConfigError, match=r"same classes in another order \(class 'ZoomIn' is"):
        _open(run_dir, ["ZoomIn", "MoveLeft", "MoveRight"])


def test_other_classes_are_refused_naming_what_differs(run_dir):
    with pytest.raises(ConfigError, match=r"adds \['ZoomOut'\], lacks \['ZoomIn'\]"):
        _open(run_dir, ["MoveLeft", "MoveRight", "ZoomOut"])
