"""`actrec train`: train a recipe on prepared data into a run directory."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from actrec_cli.console import RichProgress, console, import_tensorflow_quietly


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
    type=int,
    default=None,
    help="Checkpoint and stop after this many steps (for time-limited jobs).",
)
def train(recipe_name, prepared, run_dir, overrides, resume, stop_after_steps):
    """Train a TSN / TSM model. Run one process per worker (see `actrec launch`, TF_CONFIG or
    Slurm); only the chief writes the run directory."""
    import_tensorflow_quietly(start_runtime=False)
    from actrec.config import apply_overrides, load_recipe
    from actrec.errors import ConfigError
    from actrec.train.run import PREEMPTED_EXIT_CODE, RECIPE_FILE
    from actrec.train.run import train as train_run
    from actrec.train.strategy import is_chief

    if recipe_name is None:
        if resume is None or not (run_dir / RECIPE_FILE).exists():
            raise ConfigError(
                "give --recipe NAME (see `actrec recipes`), or --resume an existing --workdir"
            )
        recipe_name = str(run_dir / RECIPE_FILE)
    recipe = apply_overrides(load_recipe(recipe_name), list(overrides))
    chief = is_chief()
    progress = RichProgress("steps") if chief else None
    summary = train_run(
        recipe,
        prepared,
        run_dir,
        resume=resume,
        progress=progress,
        stop_after_steps=stop_after_steps,
    )
    if not chief:
        return
    if summary.preempted:
        console().print(
            f"preempted: checkpoint saved in {run_dir}; re-run with --resume to continue",
            soft_wrap=True,
        )
        sys.exit(PREEMPTED_EXIT_CODE)
    if summary.stopped_early:
        console().print(
            f"stopped after {stop_after_steps} steps at step {summary.global_step}; "
            f"continue with --resume",
            soft_wrap=True,
        )
        return
    accuracy = summary.validation.get("accuracy")
    shown = f", validation accuracy {accuracy:.3f}" if accuracy is not None else ""
    console().print(
        f"trained {summary.epochs_done} epochs ({summary.global_step} steps) in "
        f"{summary.elapsed_seconds:.0f} s{shown}; weights: {summary.weights_path}",
        soft_wrap=True,
    )
