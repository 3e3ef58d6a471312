"""What `train` writes into the run folder's run.json (through actrec.runs.folder): the record at
the start, the final record, and the status of a run stopped by an error. Chief only."""

from __future__ import annotations

from pathlib import Path

from actrec import __version__
from actrec.runs.folder import RECIPE_FILE, update_run_record, write_run_record


def start_run_folder(
    run_dir: Path, recipe, prepared_dir: Path, data, cluster, has_run, decision, previous, start
) -> None:
    """Create `run_dir`, write recipe.yaml (a new run) and run.json's "training" record:
    `data` (actrec.train.inputs.training_data.TrainingData), the batch `decision` (or the one of
    the `previous` record), the best validation so far, the validation hold-out and the
    `start` (actrec.train.start.starting_point.StartingPoint or None)."""
    from actrec.config.files import dump_recipe
    from actrec.train.distillation.teacher import RECORD_KEY as TEACHER_KEY
    from actrec.train.start.starting_point import RECORD_KEY

    run_dir.mkdir(parents=True, exist_ok=True)
    if not has_run:
        dump_recipe(recipe, run_dir / RECIPE_FILE)
    record = {
        "actrec": __version__,
        "data": str(prepared_dir.resolve()),
        "classes": list(data.info.classes),
        "num_classes": data.info.num_classes,
        "status": "training",
        "workers": cluster.num_workers,
    }
    if decision is not None:
        record["batch_decision"] = decision.to_json()
    elif "batch_decision" in previous:
        record["batch_decision"] = previous["batch_decision"]
    if "best" in previous:  # checked against the resumed step by BestWeights
        record["best"] = previous["best"]
    if "worker_changes" in previous:
        record["worker_changes"] = previous["worker_changes"]
    if start is not None:
        record[RECORD_KEY] = start.to_json()
    if data.teacher is not None:
        record[TEACHER_KEY] = data.teacher.to_json()
    if data.validation.held_out:
        record["holdout"] = data.validation.to_json(
            recipe.data.validation_holdout, recipe.runtime.seed
        )
    write_run_record(run_dir, record)


def worker_change_note(run_dir: Path, previous: dict, num_workers: int, step: int, recipe):
    """The line saying that a resumed run continues on another number of workers than it
    last trained on (None when it does not), recorded in run.json's "worker_changes"."""
    from actrec.train.schedule import global_batch_size

    before = previous.get("workers")
    if before is None or before == num_workers:
        return None
    change = {"step": step, "from": before, "to": num_workers}
    update_run_record(run_dir, worker_changes=[*previous.get("worker_changes", []), change])
    return (
        f"resumed on {num_workers} worker{'s' * (num_workers > 1)} at step {step}; the run "
        f"trained on {before} before. Each step still takes the global batch of the recipe "
        f"({global_batch_size(recipe.train, 0)} at the first epoch) from the same example "
        "stream, so no clip is skipped or repeated"
    )


def finish_run_record(run_dir: Path, summary, divergence) -> None:
    """run.json's status ("finished", "preempted" or "stopped") and final numbers."""
    finished = not (summary.preempted or summary.stopped_early)
    if summary.validation_confusion is not None:  # the last validation, per class
        update_run_record(run_dir, validation_confusion=summary.validation_confusion.tolist())
    update_run_record(
        run_dir,
        status="finished" if finished else ("preempted" if summary.preempted else "stopped"),
        global_step=summary.global_step,
        all_reduces=summary.num_all_reduces,
        epochs_done=summary.epochs_done,
        validation=summary.validation,
        recoveries=divergence.recoveries,
    )


def record_status(run_dir: Path, status: str, error: str) -> None:
    """run.json's status and the error that stopped the run."""
    update_run_record(run_dir, status=status, error=error)
