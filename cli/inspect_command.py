"""`actrec inspect`: read a prepared dataset back and check it against its manifest."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from actrec_cli.argument_checks import check_inspect_arguments
from actrec_cli.console import console, import_tensorflow_quietly, progress_for
from rich.table import Table


@click.command()
@click.argument("prepared", type=click.Path(path_type=Path))
@click.option(
    "--contact-sheet",
    type=click.Path(path_type=Path),
    help="PNG of RGB frames over their colour-coded flow, one video per class, with a key "
    "to the flow colours [default: PREPARED/contact_sheet.png].",
)
@click.option(
    "--videos",
    "num_videos",
    type=click.IntRange(min=0),
    default=8,
    show_default=True,
    help="Classes on the contact sheet, one video each (0: no contact sheet).",
)
@click.option(
    "--frames",
    "frames_per_video",
    type=click.IntRange(min=1),
    default=6,
    show_default=True,
    help="Frames per video on the contact sheet.",
)
def inspect(prepared, contact_sheet, num_videos, frames_per_video):
    """Read every record in PREPARED, check it against manifest.json, draw a contact sheet."""
    check_inspect_arguments(prepared, contact_sheet)  # before TensorFlow: at once
    import_tensorflow_quietly()
    from actrec.data.maintenance.inspect import inspect_prepared  # OpenCV: after the checks

    report = inspect_prepared(
        prepared,
        contact_sheet or prepared / "contact_sheet.png",
        num_videos,
        frames_per_video,
        progress_for("records"),
    )
    table = Table(title=f"{prepared}")
    for column in ("split", "records", "manifest", "skipped", "frames"):
        table.add_column(column, justify="left" if column == "split" else "right")
    for split in report.records:
        table.add_row(
            split,
            str(report.records[split]),
            str(report.expected[split]),
            str(report.skipped[split]),
            str(report.frames[split]),
        )
    console().print(table)
    if report.contact_sheet:
        console().print(f"contact sheet: {report.contact_sheet}", soft_wrap=True)
    if not report.ok:
        for problem in report.problems:
            console().print(f"[red]problem:[/] {problem}", highlight=False, soft_wrap=True)
        console().print(f"[bold red]{report.num_problems} problem(s) found[/]")
        sys.exit(1)
    checksums = (
        "every shard matches its size and SHA-256, and every record"
        if report.checksums_verified
        else "every record"
    )
    console().print(f"[green]{checksums} matches the manifest[/]")
