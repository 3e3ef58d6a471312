"""What `actrec recipes` prints: the table of built-in recipes and a recipe's fidelity table
(--sources)."""

from __future__ import annotations

from actrec_cli.console import console
from rich.console import Console
from rich.table import Table

from actrec.config.files import load_recipe
from actrec.config.recipe_sources import recipe_fields, source_table
from actrec.train.schedule import batch_schedule_summary, learning_rate_summary

# The fidelity table wraps its source column to fit this width when not on a terminal (the
# width of a common terminal); the recipes listing is drawn whole (actrec_cli.console).
SOURCES_WIDTH = 100
MARKERS = {"source": "", "deviation": "≠", "actrec": "·", "default": "-"}


def value_text(value: object) -> str:
    """A recipe value as YAML writes it: null, true, 0.001, [30, 60]."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return (
            "["
            + ", ".join(f"{item:g}" if isinstance(item, float) else str(item) for item in value)
            + "]"
        )
    return f"{value:g}" if isinstance(value, float) else str(value)


def print_sources(name: str) -> None:
    """The fidelity table of built-in recipe `name`: field, value, mark, source (fields the
    recipe leaves at the dataclass default marked as such)."""
    values = recipe_fields(load_recipe(name))
    table_data = source_table(name)
    table = Table(
        title=f"{name}: every field and its source",
        caption="≠ deviation from the source (why in the row)   · actrec setting, no published "
        "counterpart   - not set by the recipe (actrec's default)   (blank: the source's value)",
    )
    table.add_column("field", no_wrap=True)
    table.add_column("value", overflow="fold", max_width=22)
    table.add_column("", no_wrap=True, width=1)
    table.add_column("source", overflow="fold", ratio=1)
    for field, value in values.items():
        row = table_data.row(field)
        if row is None:
            table.add_row(field, value_text(value), MARKERS["default"], "actrec default")
            continue
        text = row.source or row.reason
        if row.deviation:
            text = f"{text}; deviation: {row.deviation}"
        table.add_row(field, value_text(value), MARKERS[row.kind], text)
    out = console()
    if not out.is_terminal:
        out = Console(width=SOURCES_WIDTH)
    out.print(table)
    out.print("citations:", highlight=False)
    for key, citation in table_data.citations.items():
        out.print(f"  {key}: {citation}", highlight=False, soft_wrap=True)


def recipes_table(recipes_to_list) -> Table:
    """One row per recipe; each cell is a few short phrases, one per line, so that no phrase
    is cut or broken in a terminal of 100 columns (the name column is as wide as the longest
    name; the reference wraps under it)."""
    table = Table(
        title="Built-in recipes (actrec recipes --show NAME prints one)",
        title_justify="left",
        show_lines=True,
    )
    longest = max(len(recipe.name) for recipe in recipes_to_list)
    table.add_column("recipe and reference", min_width=longest, overflow="fold")
    table.add_column("model", no_wrap=True)
    table.add_column("schedule and sync", no_wrap=True)
    for recipe in recipes_to_list:
        data, model, train = recipe.data, recipe.model, recipe.train
        modality = data.modality if data.modality == "rgb" else f"flow×{data.new_length}"
        sync = train.sync if train.sync == "allreduce" else f"kavg K={train.kavg_steps}"
        reference = recipe.reference.splitlines()[0] if recipe.reference else ""
        table.add_row(
            f"[bold]{recipe.name}[/]\n[dim]{reference}[/]",
            f"{model.architecture}/{model.backbone}\n{modality} T={data.num_segments}"
            + ("\nMARS: from flow" if train.distill_from is not None else ""),
            f"batch {batch_schedule_summary(train)}\nlr {learning_rate_summary(train)}\n"
            f"{train.epochs} epochs\n{sync}",
        )
    return table
