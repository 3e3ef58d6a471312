"""The run folder at the start of `train`: a new run, or one to resume, and where it resumes.

Only the chief judges the folder (the others would race with its writes); its verdict
reaches every worker, so a refused run stops them all instead of leaving them waiting in
their first collective.
"""

from __future__ import annotations

from pathlib import Path

from actrec.cluster.collectives import agreed_flag
from actrec.config.files import load_recipe, recipe_to_dict
from actrec.errors import ActrecError, ConfigError, OutputError
from actrec.runs.folder import RECIPE_FILE
from actrec.runs.record import RunRecord, read_run_record
from actrec.train.life.checkpoint import Position
from actrec.train.memory.recipe_edits import auto_fields, with_saved_decision
from actrec.train.start.source_settings import with_recorded_inheritance


def check_run_directory(run_dir: Path, resume: str | None) -> bool:
    """Whether `run_dir` holds a run to resume; OutputError when it cannot be used."""
    if run_dir.exists() and not run_dir.is_dir():
        raise OutputError(f"--workdir {run_dir} is a file; pass a folder (created if missing)")
    has_run = (run_dir / RECIPE_FILE).exists()
    if has_run and resume is None:
        raise OutputError(
            f"{run_dir} already holds a training run; add --resume to continue it, or choose "
            "a new --workdir (a trained run is never overwritten)"
        )
    if not has_run and run_dir.exists() and any(run_dir.iterdir()):
        raise OutputError(
            f"--workdir {run_dir} is not empty and holds no actrec run; choose an empty or new "
            "folder"
        )
    return has_run


def check_same_recipe(run_dir: Path, recipe) -> None:
    """ConfigError naming the differences when `recipe` is not the one `run_dir` trained."""
    saved = load_recipe(str(run_dir / RECIPE_FILE))
    old, new = recipe_to_dict(saved), recipe_to_dict(recipe)
    differences = [
        f"{section}.{key}: {old[section].get(key)!r} -> {new[section].get(key)!r}"
        for section in ("data", "model", "train")
        for key in sorted(set(old[section]) | set(new[section]))
        if old[section].get(key) != new[section].get(key)
    ]
    if differences:
        raise ConfigError(
            f"{run_dir} was trained with a different recipe ({'; '.join(differences[:5])}); "
            "resume without --recipe/--set to continue it as it was, or train into a new "
            "--workdir"
        )


def check_worker_count(run_dir: Path, recipe, previous_record: RunRecord, num_workers: int) -> None:
    """ConfigError when the run in `run_dir`, last trained on the workers its run.json
    records, cannot continue on `num_workers`: K-step averaging keeps state per worker (its
    local steps, and Adam's moments with adam_state "local") that no checkpoint holds for
    another number of workers. An all-reduce run can: the global batch and the example
    stream stay the same (actrec.data.input.order)."""
    before = previous_record.workers
    if before is None or before == num_workers or recipe.train.sync != "kavg":
        return
    raise ConfigError(
        f"{run_dir} trains with train.sync=kavg on {before} workers and cannot continue on "
        f"{num_workers}: K-step averaging keeps each worker's local steps and optimizer state, "
        f"which its checkpoints hold only for the chief; resume it on {before} workers (an "
        "all-reduce run can continue on any number of workers that divides its global batch)"
    )


def check_same_classes(run_dir: Path, previous_record: RunRecord, classes) -> None:
    """ConfigError when the data a run resumes on holds other classes than it trained on, or
    the same ones in another order: its classifier's rows and the records' labels would no
    longer agree (a new run from it, `--init-from`, maps them by name)."""
    trained = None if previous_record.classes is None else list(previous_record.classes)
    if classes is None or trained is None or list(classes) == trained:
        return
    if sorted(classes) == sorted(trained):
        moved = next(name for name, other in zip(classes, trained, strict=True) if name != other)
        raise ConfigError(
            f"{run_dir} trained on the same classes in another order (class {moved!r} is label "
            f"{trained.index(moved)} there, {list(classes).index(moved)} in the data): resume "
            "on the data it was trained on, or start a new run from it with --init-from RUN "
            "(which matches the classes by name)"
        )
    added = sorted(set(classes) - set(trained))
    missing = sorted(set(trained) - set(classes))
    raise ConfigError(
        f"{run_dir} trained on other classes than the data holds ({len(trained)} trained, "
        f"{len(classes)} in the data; the data adds {added[:3] or 'none'}, lacks "
        f"{missing[:3] or 'none'}): resume on the data it was "
        "trained on, or start a new run from it with --init-from RUN"
    )


def open_run_directory(
    strategy, recipe, cluster, run_dir: Path, resume: str | None, given_settings=(), classes=None
):
    """(the resumed recipe, has_run, the previous run.json's RunRecord, empty for a new run):
    the chief's verdict on `run_dir`, agreed by every worker. A resumed run's recipe is
    `recipe` with the auto batch numbers its recipe.yaml holds and the settings its run.json
    records as inherited from its starting point (except those in `given_settings`, the
    command line's; actrec.train.start.source_settings); its data's `classes` must be those
    it trained on, in the same order. A new run's is `recipe`."""
    resumed, has_run, refusal, previous_record = recipe, False, None, RunRecord()
    if cluster.is_chief:
        try:
            has_run = check_run_directory(run_dir, resume)
            if has_run:
                previous_record = read_run_record(run_dir)
                resumed = _resumed_recipe(recipe, run_dir, previous_record, given_settings)
                check_same_recipe(run_dir, resumed)
                check_worker_count(run_dir, resumed, previous_record, cluster.num_workers)
                check_same_classes(run_dir, previous_record, classes)
        except ActrecError as error:
            refusal = error
    if agreed_flag(strategy, refusal is not None, cluster.num_workers):
        raise refusal or OutputError(
            f"the chief worker refused --workdir {run_dir}; its output says why"
        )
    return resumed, has_run, previous_record


def _resumed_recipe(recipe, run_dir: Path, previous_record: RunRecord, given_settings):
    """`recipe` with the auto numbers the run's recipe.yaml holds and the settings its
    run.json records as inherited."""
    saved = recipe
    if auto_fields(recipe):  # the run's recipe.yaml holds the numbers it chose
        saved = with_saved_decision(recipe, load_recipe(str(run_dir / RECIPE_FILE)))
    return with_recorded_inheritance(saved, previous_record, given_settings)


def starts_afresh(checkpoints, resume: str | None) -> bool:
    """Whether the run starts at its beginning (no checkpoint to resume from)."""
    return resume is None or (resume == "latest" and checkpoints.latest_path() is None)


def restore_position(checkpoints, resume: str | None, trainer, divergence, num_classes, progress):
    """(Position, the checkpoint resumed from or None): the trainer restored from `resume`
    ("latest" or a checkpoint path), or a new run at its start."""
    position = Position(0, 0)
    resumed_from = None
    if not starts_afresh(checkpoints, resume):
        resumed_from = None if resume == "latest" else resume
        position = checkpoints.restore(resumed_from, expected_classes=num_classes)
        resumed_from = resumed_from or checkpoints.latest_path()
        progress.message(
            f"resumed from {resumed_from}: epoch {position.epoch + 1}, "
            f"step {position.step_in_epoch}"
        )
    elif divergence.enabled:  # a divergence before the first save needs a state to return to
        checkpoints.save(position, trainer.step)
    return position, resumed_from
