"""`actrec recipes`: list the built-in training recipes, or print one as YAML."""

from __future__ import annotations

import click
from actrec_cli.console import console
from rich.console import Console
from rich.table import Table

# Output that is not a terminal (a pipe, a file, a test) is drawn this wide: the width of a
# common terminal, so a piped listing reads like the interactive one.
NON_TERMINAL_WIDTH = 100


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

    out = console()
    if not out.is_terminal:
        out = Console(width=NON_TERMINAL_WIDTH, no_color=True, highlight=False)
    out.print(recipes_table([load_recipe(name) for name in builtin_recipe_names()]))


def recipes_table(recipes_to_list) -> Table:
    """One row per recipe; each cell is a few short phrases, one per line, so that no phrase
    is cut or broken in a terminal of 100 columns (the name column is as wide as the longest
    name; the reference wraps under it)."""
    from actrec.train.schedule import batch_schedule_summary, learning_rate_summary

    table = Table(
        title="Built-in recipes (actrec recipes --show NAME prints one)",
        title_justify="left",
        show_lines=True,
    )
    longest = max(len(recipe.name) for recipe in recipes_to_list)
    table.add_column("recipe and reference", min_width=longest, overflow="fold")
    table.add_column("model", no_wrap=True)
    table.add_column("schedule", no_wrap=True)
    table.add_column("sync", no_wrap=True)
    for recipe in recipes_to_list:
        data, model, train = recipe.data, recipe.model, recipe.train
        modality = data.modality if data.modality == "rgb" else f"flow×{data.new_length}"
        sync = train.sync if train.sync == "allreduce" else f"kavg K={train.kavg_steps}"
        reference = recipe.reference.splitlines()[0] if recipe.reference else ""
        table.add_row(
            f"[bold]{recipe.name}[/]\n[dim]{reference}[/]",
            f"{model.architecture}/{model.backbone}\n{modality} T={data.num_segments}",
            f"batch {batch_schedule_summary(train)}\nlr {learning_rate_summary(train)}\n"
            f"{train.epochs} epochs",
            sync,
        )
    return table
