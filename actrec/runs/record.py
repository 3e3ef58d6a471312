"""run.json, typed: RunRecord, and the one place it is read from and written to.

Every field keeps its origin (ORIGINS: what set it), so a reader finds where a value in
run.json was decided. On disk the keys and values are those run.json always had: a field
that is None (or empty) is not written, except "data" (null for a converted published
model, which has no prepared folder), and the keys this version does not know are kept as
they were (`extra`).

The chief of a training run keeps its record in memory (RunRecordFile) and writes it
atomically after each change, instead of reading the file back at every change.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from actrec.errors import ConfigError
from actrec.files.atomic import write_json_atomic
from actrec.runs.folder import RUN_FILE

ORIGINS = {
    "actrec": "actrec.__version__ of the start (train) or the conversion",
    "data": "the prepared folder trained on (--data, resolved); null: converted",
    "classes": "the prepared data's class names, index = label",
    "num_classes": "len(classes)",
    "status": (
        "train: training, finished, preempted, stopped, damaged-data, diverged, worker-lost; "
        "a conversion: finished"
    ),
    "workers": "the cluster's workers at the latest start (actrec.cluster)",
    "batch_decision": (
        "the chief's probe of train.batch_size=auto (actrec.train.memory.BatchDecision), "
        "kept by a resumed run"
    ),
    "best": "the best validation so far (actrec.train.life.best)",
    "worker_changes": "each resume on another number of workers (actrec.train.life.run_record)",
    "initialised_from": (
        "the starting point, model.weights run:PATH (actrec.train.start.starting_point)"
    ),
    "distilled_from": "the flow teacher, train.distill_from (actrec.train.distillation.teacher)",
    "holdout": (
        "the validation hold-out, data.validation_holdout (actrec.train.inputs.validation)"
    ),
    "validation_confusion": "the last validation's confusion [K, K]",
    "global_step": "the optimizer steps done (the trainer, at the end)",
    "all_reduces": "the gradient all-reduces done (the trainer, at the end)",
    "epochs_done": "the epochs done (at the end)",
    "validation": "the last validation's metrics (at the end)",
    "recoveries": "the divergence recoveries (actrec.train.life.divergence)",
    "error": "the error that stopped the run (damaged data, divergence, ...)",
    "prepare_settings": "a converted model's preparation settings (actrec.published.convert)",
    "converted_from": "the converted PyTorch file (actrec.published.convert)",
    "probe": (
        "a probe run's head and feature cache: its folder, each split's features computed "
        "or reused, the views and feature width (actrec.train.probe)"
    ),
}
"""What sets each field of RunRecord (run.json's key): where its value was decided."""


@dataclass(frozen=True)
class RunRecord:
    """run.json: what a run trained on, how it started, how far it got (the origin of each
    field: ORIGINS)."""

    actrec: str | None = None
    data: str | None = None
    classes: tuple[str, ...] | None = None
    num_classes: int | None = None
    status: str | None = None
    workers: int | None = None
    batch_decision: dict | None = None
    best: dict | None = None
    worker_changes: tuple[dict, ...] = ()
    initialised_from: dict | None = None
    distilled_from: dict | None = None
    holdout: dict | None = None
    validation_confusion: list | None = None
    global_step: int | None = None
    all_reduces: int | None = None
    epochs_done: int | None = None
    validation: dict | None = None
    recoveries: list | None = None
    error: str | None = None
    prepare_settings: dict | None = None
    converted_from: dict | None = None
    probe: dict | None = None
    extra: dict = field(default_factory=dict)  # the keys this version does not know

    def to_json(self) -> dict:
        """run.json's object: the fields in order (None and empty ones left out, "data" kept),
        then the extra keys."""
        record = {}
        for item in fields(self):
            value = getattr(self, item.name)
            if item.name == "extra" or (value in (None, ()) and item.name != "data"):
                continue
            record[item.name] = list(value) if isinstance(value, tuple) else value
        return {**record, **self.extra}

    @classmethod
    def from_json(cls, record: dict) -> RunRecord:
        """The record of run.json's object (unknown keys kept in `extra`)."""
        known = {item.name for item in fields(cls)} - {"extra"}
        values = {key: value for key, value in record.items() if key in known}
        for key in ("classes", "worker_changes"):
            if isinstance(values.get(key), list):
                values[key] = tuple(values[key])
        if "classes" in values and not isinstance(values["classes"], tuple):
            values["classes"] = None
        extra = {key: value for key, value in record.items() if key not in known}
        return cls(**values, extra=extra)


def weights_license(record: RunRecord) -> str | None:
    """The license of the published weights a run holds: those it was converted from, else
    those its own starting point carried (a fine-tuning of a fine-tuning keeps it)."""
    for origin, key in (
        (record.converted_from, "license"),
        (record.initialised_from, "weights_license"),
    ):
        if isinstance(origin, dict) and origin.get(key):
            return str(origin[key])
    return None


def read_run_record(run_dir: Path | str) -> RunRecord:
    """The run's run.json (an empty record when it is missing or unreadable)."""
    try:
        record = json.loads((Path(run_dir) / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return RunRecord()
    return RunRecord.from_json(record) if isinstance(record, dict) else RunRecord()


def load_run_record(run_dir: Path | str) -> RunRecord:
    """The run.json of a run to evaluate or export; ConfigError naming the file when it cannot
    be read or holds no class list."""
    path = Path(run_dir) / RUN_FILE
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ConfigError(f"{path}: cannot read the run record ({error})") from None
    if not isinstance(record, dict) or not isinstance(record.get("classes"), list):
        raise ConfigError(f"{path}: the run record has no class list; is this an actrec run?")
    return RunRecord.from_json(record)


def write_run_record(run_dir: Path | str, record: RunRecord) -> None:
    """Replace run.json with `record` (atomically)."""
    write_json_atomic(Path(run_dir) / RUN_FILE, record.to_json())


class RunRecordFile:
    """A training run's run.json as its chief keeps it: the record in memory, written
    (atomically) at once and after every change; never read back."""

    def __init__(self, run_dir: Path | str, record: RunRecord):
        self.run_dir = Path(run_dir)
        self.record = record
        write_run_record(self.run_dir, record)

    def update(self, **changes) -> RunRecord:
        """The record with `changes` (field -> value), written; the new record."""
        self.record = replace(self.record, **changes)
        write_run_record(self.run_dir, self.record)
        return self.record
