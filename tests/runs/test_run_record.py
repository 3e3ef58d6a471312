"""run.json typed (actrec.runs.record): the files runs wrote before read back and written as
they were, every field's origin, and the chief's record kept in memory, never read back."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest

from actrec.errors import ConfigError
from actrec.runs.record import (
    ORIGINS,
    RunRecord,
    RunRecordFile,
    load_run_record,
    read_run_record,
    write_run_record,
)

FINISHED_RUN = {
    "actrec": "0.1.0",
    "data": "/data/prepared",
    "classes": ["MoveLeft", "MoveRight"],
    "num_classes": 2,
    "status": "finished",
    "workers": 2,
    "batch_decision": {"per_replica_batch": 8, "probes": []},
    "best": {"epoch": 1, "global_step": 6, "accuracy": 0.5, "split": "val", "file": "b.h5"},
    "worker_changes": [{"step": 3, "from": 1, "to": 2}],
    "initialised_from": {"path": "/runs/source", "kind": "run", "inherited": []},
    "distilled_from": {"path": "/runs/flow", "sha256": "ab"},
    "holdout": {"fraction": 0.1, "seed": 0, "num_videos": 1, "videos": ["v1"]},
    "validation_confusion": [[1, 0], [1, 0]],
    "global_step": 8,
    "all_reduces": 8,
    "epochs_done": 2,
    "validation": {"accuracy": 0.5, "loss": 0.7},
    "recoveries": [],
    "a_later_key": {"kept": True},
}
"""A run.json of every key `actrec train` writes (and one this version does not know)."""

CONVERTED = {
    "actrec": "0.1.0",
    "data": None,
    "classes": ["a"],
    "num_classes": 1,
    "status": "finished",
    "prepare_settings": {"frame_size": 256},
    "converted_from": {"file_name": "tsm.pth", "layout": "tsm"},
}
"""The run.json of a converted published model (actrec.published.convert): no prepared folder."""


@pytest.mark.parametrize("record", [FINISHED_RUN, CONVERTED], ids=["trained", "converted"])
def test_a_run_json_reads_back_and_writes_the_same_keys_values_and_order(tmp_path, record):
    (tmp_path / "run.json").write_text(json.dumps(record))
    typed = read_run_record(tmp_path)
    (tmp_path / "copy").mkdir()
    write_run_record(tmp_path / "copy", typed)
    written = json.loads((tmp_path / "copy" / "run.json").read_text())
    assert list(written.items()) == list(record.items())


def test_the_fields_are_typed_values():
    typed = RunRecord.from_json(FINISHED_RUN)
    assert typed.classes == ("MoveLeft", "MoveRight") and typed.workers == 2
    assert typed.worker_changes == ({"step": 3, "from": 1, "to": 2},)
    assert typed.extra == {"a_later_key": {"kept": True}}


def test_every_field_says_where_its_value_comes_from():
    names = [item.name for item in fields(RunRecord) if item.name != "extra"]
    assert list(ORIGINS) == names
    assert all(ORIGINS[name].strip() for name in names)


def test_a_missing_or_unreadable_record_reads_as_empty_and_loading_it_is_refused(tmp_path):
    assert read_run_record(tmp_path) == RunRecord()
    (tmp_path / "run.json").write_text("{not json")
    assert read_run_record(tmp_path) == RunRecord()
    with pytest.raises(ConfigError, match="cannot read the run record"):
        load_run_record(tmp_path)
    (tmp_path / "run.json").write_text('{"classes": "a"}')
    with pytest.raises(ConfigError, match="has no class list"):
        load_run_record(tmp_path)


def test_the_chiefs_record_is_written_at_once_and_at_each_change_never_read_back(tmp_path):
    record_file = RunRecordFile(tmp_path, RunRecord(classes=("a",), status="training"))
    assert json.loads((tmp_path / "run.json").read_text()) == {
        "data": None,
        "classes": ["a"],
        "status": "training",
    }
    (tmp_path / "run.json").write_text('{"classes": ["edited by hand"]}')
    record_file.update(status="finished", global_step=3)
    assert json.loads((tmp_path / "run.json").read_text()) == {
        "data": None,
        "classes": ["a"],
        "status": "finished",
        "global_step": 3,
    }
    assert record_file.record.status == "finished"
    assert not list(tmp_path.glob("*.tmp*"))  # written atomically: no temporary file left
