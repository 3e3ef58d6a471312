"""What `train` records in run.json (actrec.runs.record.RunRecord): the record at the start, a
resume on another number of workers, the status of a run stopped by an error, and the final
record. Chief only: the other workers hold no RunRecordFile."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from actrec import __version__
from actrec.config.files import dump_recipe
from actrec.runs.folder import RECIPE_FILE
from actrec.runs.record import RunRecord, RunRecordFile
from actrec.train.schedule import global_batch_size

if TYPE_CHECKING:
    from actrec.train.plan import RunPlan


def start_run_folder(
    run_dir: Path, *, plan: RunPlan, prepared_dir: Path, num_workers: int
) -> RunRecordFile:
    """Create `run_dir`, write recipe.yaml (a new run) and run.json's "training" record: the
    plan's data, its batch decision (or the one the previous record holds), the best
    validation so far, the validation hold-out, the starting point and the teacher."""
    run_dir.mkdir(parents=True, exist_ok=True)
    if not plan.has_run:
        dump_recipe(plan.recipe, run_dir / RECIPE_FILE)
    data, previous = plan.data, plan.previous
    holdout = None
    if data.validation.held_out:
        holdout = data.validation.to_json(
            plan.recipe.data.validation_holdout, plan.recipe.runtime.seed
        )
    record = RunRecord(
        actrec=__version__,
        data=str(prepared_dir.resolve()),
        classes=tuple(data.info.classes),
        num_classes=data.info.num_classes,
        status="training",
        workers=num_workers,
        batch_decision=(
            previous.batch_decision if plan.decision is None else plan.decision.to_json()
        ),
        best=previous.best,  # checked against the resumed step by BestWeights
        worker_changes=previous.worker_changes,
        initialised_from=None if plan.start is None else plan.start.to_json(),
        distilled_from=None if data.teacher is None else data.teacher.to_json(),
        holdout=holdout,
    )
    return RunRecordFile(run_dir, record)


def worker_change_note(
    record_file: RunRecordFile, *, workers_before: int | None, num_workers: int, step: int, recipe
) -> str | None:
    """The line saying that a resumed run continues on another number of workers than it
    last trained on (`workers_before`; None when it does not), recorded in run.json's
    "worker_changes"."""
    if workers_before is None or workers_before == num_workers:
        return None
    change = {"step": step, "from": workers_before, "to": num_workers}
    record_file.update(worker_changes=(*record_file.record.worker_changes, change))
    return (
        f"resumed on {num_workers} worker{'s' * (num_workers > 1)} at step {step}; the run "
        f"trained on {workers_before} before. Each step still takes the global batch of the "
        f"recipe ({global_batch_size(recipe.train, 0)} at the first epoch) from the same "
        "example stream, so no clip is skipped or repeated"
    )


def finish_run_record(record_file: RunRecordFile, summary, recoveries: list | None) -> None:
    """run.json's status ("finished", "preempted" or "stopped"), final numbers, the last
    validation's confusion and the divergence recoveries."""
    finished = not (summary.preempted or summary.stopped_early)
    confusion = summary.validation_confusion  # the last validation, per class
    record_file.update(
        validation_confusion=(
            record_file.record.validation_confusion if confusion is None else confusion.tolist()
        ),
        status="finished" if finished else ("preempted" if summary.preempted else "stopped"),
        global_step=summary.global_step,
        all_reduces=summary.num_all_reduces,
        epochs_done=summary.epochs_done,
        validation=summary.validation,
        recoveries=recoveries,
    )


def record_status(record_file: RunRecordFile, status: str, error: str) -> None:
    """run.json's status and the error that stopped the run."""
    record_file.update(status=status, error=error)
