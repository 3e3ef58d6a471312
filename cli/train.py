"""`actrec train`: train a recipe on prepared data into a run directory."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from actrec_cli.console import console, import_tensorflow_quietly, progress_for
from actrec_cli.options import parse_batch_size_option, parse_memory_size_option


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
    type=click.IntRange(min=1),
    default=None,
    help="Checkpoint and stop after this many steps (for time-limited jobs).",
)
@click.option(
    "--batch-size",
    "batch_size",
    metavar="N|auto",
    default=None,
    callback=parse_batch_size_option,
    help="Global batch (the learning rate follows train.lr_coupling from the recipe's "
    "batch), or auto: probe the largest per-replica batch that fits --memory-budget and "
    "runs fastest, and print the table it chose from.",
)
@click.option(
    "--memory-budget",
    "memory_budget",
    metavar="SIZE",
    default=None,
    callback=parse_memory_size_option,
    help="Memory a batch may use with --batch-size auto, e.g. 6GiB (default: on CPU 80% of "
    "the available memory, measured as the process's peak; on GPU the device memory).",
)
@click.option(
    "--remat",
    is_flag=True,
    default=False,
    help="Recompute the backbone's block activations in the backward pass instead of "
    "keeping them: less memory, about one more forward pass (model.remat=true).",
)
def train(
    recipe_name,
    prepared,
    run_dir,
    overrides,
    resume,
    stop_after_steps,
    batch_size,
    memory_budget,
    remat,
):
    """Train a TSN / TSM model. Run one process per worker (see `actrec launch`, TF_CONFIG or
    Slurm); only the chief writes the run directory."""
    import_tensorflow_quietly(start_runtime=False)
    from actrec.config import apply_overrides, load_recipe
    from actrec.errors import ConfigError
    from actrec.runs import RECIPE_FILE
    from actrec.train.memory import auto_fields, with_batch_size, with_remat
    from actrec.train.preemption import PREEMPTED_EXIT_CODE
    from actrec.train.run import train as train_run
    from actrec.train.strategy import is_chief

    if recipe_name is None:
        if resume is None or not (run_dir / RECIPE_FILE).exists():
            raise ConfigError(
                "give --recipe NAME (see `actrec recipes`), or --resume an existing --workdir"
            )
        recipe_name = str(run_dir / RECIPE_FILE)
    recipe = apply_overrides(load_recipe(recipe_name), list(overrides))
    if batch_size is not None:
        recipe = with_batch_size(recipe, batch_size)
    if remat:
        recipe = with_remat(recipe)
    chief = is_chief()
    if memory_budget is not None and not auto_fields(recipe) and chief:
        console().print(
            "note: --memory-budget is used only when the batch is auto (--batch-size auto)",
            soft_wrap=True,
        )
    progress = progress_for("steps", every=recipe.runtime.log_every_steps) if chief else None
    summary = train_run(
        recipe,
        prepared,
        run_dir,
        resume=resume,
        progress=progress,
        stop_after_steps=stop_after_steps,
        memory_budget=memory_budget,
        on_batch_decision=print_batch_decision if chief else None,
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


def print_batch_decision(decision) -> None:
    """The table `--batch-size auto` chose from, and what it chose."""
    from rich.table import Table

    from actrec.train.memory import format_bytes

    budget = format_bytes(decision.budget_bytes) if decision.budget_bytes else "device memory"
    table = Table(
        title=f"per-replica batch probed on {decision.device.upper()}, budget {budget}"
        + (", remat" if decision.remat else ""),
        title_justify="left",
    )
    for column in ("batch", "peak", "fits", "step ms", "model ms", "clips/s"):
        table.add_column(column, justify="left" if column == "fits" else "right")
    table.add_column("")
    for row in decision.rows():
        table.add_row(
            str(row["batch"]),
            row["peak"],
            row["fits"],
            "-" if row["step_ms"] is None else f"{row['step_ms']:.1f}",
            "-" if row["model_ms"] is None else f"{row['model_ms']:.1f}",
            "-" if row["clips_per_second"] is None else f"{row['clips_per_second']:.1f}",
            "<- chosen" if row["chosen"] else "",
        )
    console().print(table)
    console().print(f"chosen: {decision.summary()}", soft_wrap=True, highlight=False)
