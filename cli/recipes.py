"""`actrec recipes`: list the built-in training recipes, print one as YAML, or print a
built-in recipe's fidelity table (every field, its value and its source)."""

from __future__ import annotations

import click
from actrec_cli.console import console
from actrec_cli.recipe_tables import print_sources, recipes_table

from actrec.config.files import load_recipe, recipe_to_yaml
from actrec.config.inheritance import builtin_recipe_names
from actrec.config.validate import validate_recipe
from actrec.errors import ConfigError


@click.command()
@click.option(
    "--show",
    "show",
    metavar="NAME|FILE",
    help="Print this recipe (a built-in name or a YAML file) as resolved YAML.",
)
@click.option(
    "--sources",
    is_flag=True,
    help="With --show NAME (a built-in recipe): every field, its value and the file:line of "
    "the official code or paper it comes from, deviations marked.",
)
def recipes(show: str | None, sources: bool) -> None:
    """List the built-in recipes (published hyperparameters and their sources).

    Use a name with `actrec train --recipe NAME`; `--show NAME` prints the full recipe
    as YAML, a starting point for a recipe file of your own; `--show NAME --sources` its
    fidelity table."""
    if sources:
        if show is None:
            raise ConfigError(
                "--sources needs a built-in recipe: actrec recipes --show NAME --sources"
            )
        if show not in builtin_recipe_names():
            raise ConfigError(
                f"--sources: {show!r} is not a built-in recipe; fidelity tables exist for "
                f"{', '.join(builtin_recipe_names())}"
            )
        print_sources(show)
        return
    if show is not None:
        recipe = load_recipe(show)
        validate_recipe(recipe)
        click.echo(recipe_to_yaml(recipe), nl=False)
        return

    # piped (not a terminal): drawn at its natural width, nothing cut (actrec_cli.console)
    console().print(recipes_table([load_recipe(name) for name in builtin_recipe_names()]))
