"""`actrec migrate`: rewrite a format-1 prepared folder in the current record format."""

from __future__ import annotations

from pathlib import Path

import click
from actrec_cli.argument_checks import check_migrate_arguments
from actrec_cli.console import RichProgress, console, import_tensorflow_quietly


@click.command()
@click.argument("prepared", type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    required=True,
    help="New (or empty) folder for the converted dataset.",
)
def migrate(prepared, out):
    """Convert PREPARED (format 1: a record per video) to format 2 (a record per frame, so a
    clip reads only its frames) in OUT, copying the JPEGs: no video is decoded again."""
    check_migrate_arguments(prepared, out)  # before TensorFlow: at once
    import_tensorflow_quietly()
    from actrec.data.maintenance.migrate import migrate_prepared  # OpenCV: after the checks

    manifest = migrate_prepared(prepared, out, RichProgress("videos"))
    videos = sum(int(info["videos"]) for info in manifest["splits"].values())
    console().print(
        f"{videos} videos converted into {out} (format {manifest['format_version']}); "
        f"check them with `actrec inspect {out}`",
        soft_wrap=True,
    )
