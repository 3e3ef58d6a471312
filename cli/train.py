"""`actrec train`: train a recipe on prepared data into a run directory."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click
from actrec_cli.argument_checks import check_train_folders
from actrec_cli.console import console, import_tensorflow_quietly, progress_for
from actrec_cli.train_options import batch_options, recipe_from_options
from actrec_cli.train_report import (
    print_batch_decision,
    print_next_commands,
    print_outcome,
    print_validation_classes,
)

from actrec.cluster.preemption import PREEMPTED_EXIT_CODE
from actrec.cluster.strategy import is_chief
from actrec.config.choices import run_weights
from actrec.config.overrides import overridden_settings
from actrec.config.validate import validate_recipe
from actrec.errors import WorkerLostError
from actrec.runs.folder import BEST_WEIGHTS_FILE
from actrec.runs.record import read_run_record
from actrec.train.memory.recipe_edits import auto_fields


@click.command()
@click.option(
    "--recipe",
    "recipe_name",
    help="Built-in recipe name (see `actrec recipes`) or a YAML file. With --resume, "
    "defaults to the run's own recipe.",
)
@click.option(
    "--data",
    "prepared",
    type=click.Path(path_type=Path),
    required=True,
    help="Prepared data folder (the --out of `actrec prepare`).",
)
@click.option(
    "--workdir",
    "run_dir",
    type=click.Path(path_type=Path),
    required=True,
    help="Run directory: recipe, checkpoints, metrics, TensorBoard, final weights.",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="SECTION.KEY=VALUE",
    help="Override a recipe value, e.g. --set train.lr=0.01 (repeatable).",
)
@click.option(
    "--init-from",
    "init_from",
    type=click.Path(path_type=Path),
    default=None,
    metavar="RUN_OR_EXPORT",
    help="Fine-tune: start from a finished run directory or an `actrec export` folder "
    "(every backbone weight; its classifier when the classes are the same, else a new one; "
    "its backbone, temporal shift and preprocessing unless --set gives them). Prints every "
    "setting that differs from the source's training. Sets model.weights=run:PATH.",
)
@click.option(
    "--distill-from",
    "distill_from",
    type=click.Path(path_type=Path),
    default=None,
    metavar="FLOW_RUN_OR_EXPORT",
    help="Distil a flow model's motion into this RGB model (MARS): a finished flow run "
    "directory or an `actrec export` folder with a flow stream, frozen; the loss adds "
    "train.distill_weight x the squared distance of the features train.distill_features "
    "names (the pooled features, or one layer's maps: the -mars recipes). The data "
    "must hold the teacher's flow. Sets train.distill_from=PATH.",
)
@click.option(
    "--resume",
    is_flag=False,
    flag_value="latest",
    default=None,
    metavar="[CHECKPOINT]",
    help="Continue the run in --workdir from its latest checkpoint (or CHECKPOINT); "
    "starts it when it has none yet.",
)
@click.option(
    "--stop-after-steps",
    type=click.IntRange(min=1),
    default=None,
    help="Checkpoint and stop after this many steps (for time-limited jobs).",
)
@click.option(
    "--feature-cache",
    "feature_cache",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    metavar="DIR",
    help="With train.probe=linear: the folder the frozen backbone's features are cached in "
    "(default RUN/feature_cache). Give several runs the same one to compute them once; a "
    "cache of other weights, views or data is recomputed.",
)
@batch_options
def train(
    recipe_name,
    prepared,
    run_dir,
    overrides,
    init_from,
    distill_from,
    resume,
    stop_after_steps,
    feature_cache,
    batch_size,
    memory_budget,
    remat,
):
    """Train a TSN / TSM model, or a probe on frozen features (train.probe). Run one
    process per worker (see `actrec launch`, TF_CONFIG or Slurm); only the chief writes the
    run directory."""
    given_settings = overridden_settings(overrides)  # kept over a source's (--init-from)
    if init_from is not None:
        overrides = (*overrides, f"model.weights={run_weights(init_from)}")
    if distill_from is not None:
        overrides = (*overrides, f"train.distill_from={distill_from}")
    recipe = recipe_from_options(recipe_name, run_dir, resume, overrides, batch_size, remat)
    # Argument mistakes are answered before TensorFlow is imported (seconds).
    validate_recipe(recipe)
    check_train_folders(prepared, run_dir, resume, init_from, distill_from)
    import_tensorflow_quietly(start_runtime=False)
    from actrec.train.run import train as train_run  # it imports TensorFlow: after the checks

    chief = is_chief()
    if memory_budget is not None and not auto_fields(recipe) and chief:
        console().print(
            "note: --memory-budget is used only when the batch is auto (--batch-size auto)",
            soft_wrap=True,
        )
    progress = progress_for("steps", every=recipe.runtime.log_every_steps) if chief else None
    try:
        summary = train_run(
            recipe,
            prepared,
            run_dir,
            resume=resume,
            progress=progress,
            stop_after_steps=stop_after_steps,
            memory_budget=memory_budget,
            on_batch_decision=print_batch_decision if chief else None,
            given_settings=given_settings,
            feature_cache=feature_cache,
        )
    except WorkerLostError as error:
        restart = ["actrec", *sys.argv[1:]] + ([] if resume else ["--resume"])
        raise WorkerLostError(f"{error}. Restart: {shlex.join(restart)}") from None
    if not chief:
        return
    print_outcome(summary, run_dir, stop_after_steps)
    if summary.weights_path is not None:
        print_validation_classes(summary, list(read_run_record(run_dir).classes or ()))
        print_next_commands(run_dir, (run_dir / BEST_WEIGHTS_FILE).is_file())
    if summary.preempted:
        sys.exit(PREEMPTED_EXIT_CODE)
