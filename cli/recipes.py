"""`actrec recipes`: list the built-in training recipes, or print one as YAML."""

from __future__ import annotations

import click
from actrec_cli.console import console
from rich.console import Console
from rich.table import Table

# Output that is not a terminal (a pipe, a file, a test) is drawn this wide, so no cell is
# cut short for lack of columns.
NON_TERMINAL_WIDTH = 200


@click.command()
@click.option(
    "--show",
    "show",
    metavar="NAME|FILE",
    help="Print this recipe (a built-in name or a YAML file) as resolved YAML.",
)
def recipes(show: str | None) -> None:
    """List the built-in recipes (published hyperparameters and their sources).

    Use a name with `actrec train --recipe NAME`; `--show NAME` prints the full recipe
    as YAML, a starting point for a recipe file of your own."""
    from actrec.config import builtin_recipe_names, load_recipe, recipe_to_yaml, validate_recipe

    if show is not None:
        recipe = load_recipe(show)
        validate_recipe(recipe)
        click.echo(recipe_to_yaml(recipe), nl=False)
        return

    from actrec.train.schedule import batch_schedule_summary, learning_rate_summary

    names = builtin_recipe_names()
    table = Table(title="Built-in recipes (actrec recipes --show NAME prints one)")
    table.add_column("name", no_wrap=True, min_width=max(len(name) for name in names))
    for column in ("model", "input", "batch", "lr", "epochs", "sync"):
        table.add_column(column, no_wrap=True)
    table.add_column("reference", overflow="fold", min_width=16)
    for name in names:
        recipe = load_recipe(name)
        data, model, train = recipe.data, recipe.model, recipe.train
        modality = data.modality if data.modality == "rgb" else f"flow×{data.new_length}"
        sync = train.sync if train.sync == "allreduce" else f"kavg K={train.kavg_steps}"
        reference = recipe.reference.splitlines()[0] if recipe.reference else ""
        table.add_row(
            name,
            f"{model.architecture}/{model.backbone}",
            f"{modality} T={data.num_segments}",
            batch_schedule_summary(train),
            learning_rate_summary(train),
            str(train.epochs),
            sync,
            reference,
        )
    out = console()
    if not out.is_terminal:
        out = Console(width=max(out.width, NON_TERMINAL_WIDTH))
    out.print(table)
