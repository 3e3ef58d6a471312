"""The batch and memory options of `actrec train`, and the recipe its options give."""

from __future__ import annotations

from pathlib import Path

import click
from actrec_cli.options import option_group, parse_batch_size_option, parse_memory_size_option

from actrec.config.files import load_recipe
from actrec.config.overrides import apply_overrides
from actrec.errors import ConfigError
from actrec.runs.folder import RECIPE_FILE
from actrec.train.memory.recipe_edits import with_batch_size, with_remat

batch_options = option_group(
    click.option(
        "--batch-size",
        "batch_size",
        metavar="N|auto",
        default=None,
        callback=parse_batch_size_option,
        help="Global batch (the learning rate follows train.lr_coupling from the recipe's "
        "batch), or auto: probe the largest per-replica batch that fits --memory-budget and "
        "runs fastest, and print the table it chose from.",
    ),
    click.option(
        "--memory-budget",
        "memory_budget",
        metavar="SIZE",
        default=None,
        callback=parse_memory_size_option,
        help="Memory a batch may use with --batch-size auto, e.g. 6GiB (default: on CPU 80% of "
        "the available memory, measured as the process's peak; on GPU the device memory).",
    ),
    click.option(
        "--remat",
        is_flag=True,
        default=False,
        help="Recompute the backbone's block activations in the backward pass instead of "
        "keeping them: less memory, about one more forward pass (model.remat=true).",
    ),
)
"""--batch-size N|auto, --memory-budget SIZE and --remat."""


def recipe_from_options(
    recipe_name: str | None,
    run_dir: Path,
    resume: str | None,
    overrides: tuple[str, ...],
    batch_size,
    remat: bool,
):
    """The recipe --recipe names (with --resume and no --recipe: the run's own), with the
    --set overrides, --batch-size and --remat applied."""
    if recipe_name is None:
        if resume is not None and not (run_dir / RECIPE_FILE).exists():
            raise ConfigError(
                f"--resume: {run_dir} holds no run to resume; give --recipe NAME (see `actrec "
                "recipes`) to start one there"
            )
        if resume is None:
            raise ConfigError(
                "give --recipe NAME (see `actrec recipes`), or --resume an existing --workdir"
            )
        recipe_name = str(run_dir / RECIPE_FILE)
    recipe = apply_overrides(load_recipe(recipe_name), list(overrides))
    if batch_size is not None:
        recipe = with_batch_size(recipe, batch_size)
    if remat:
        recipe = with_remat(recipe)
    return recipe
