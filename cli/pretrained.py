"""`actrec pretrained list | fetch | import`: the local store of ImageNet weight files."""

from __future__ import annotations

import json
from pathlib import Path

import click
from actrec_cli.console import console, progress_for
from actrec_cli.pretrained_table import print_weights_table, weights_rows


@click.group()
def pretrained() -> None:
    """ImageNet weight files of the backbones: list them, download them, or import files
    downloaded elsewhere (store: $ACTREC_PRETRAINED, else ./pretrained)."""


@pretrained.command("list")
@click.option("--verify", is_flag=True, help="Also check the digest of every file present.")
@click.option("--urls", is_flag=True, help="Also show the download URL of every file.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def list_command(verify: bool, urls: bool, as_json: bool) -> None:
    """List the known weight files, present or not, and where they are."""
    rows = weights_rows(verify)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    print_weights_table(rows, urls)


@pretrained.command()
@click.argument("backbone")
@click.option("--url", help="Download from this URL (a mirror, or file://) instead of Keras's.")
@click.option("--sha256", "expected_sha256", help="Also require this SHA-256 of the file.")
def fetch(backbone: str, url: str | None, expected_sha256: str | None) -> None:
    """Download BACKBONE's weight file into the store and check its digest."""
    from actrec.models.weight_install import fetch_weights

    path = fetch_weights(
        backbone, url=url, expected_sha256=expected_sha256, progress=progress_for("bytes")
    )
    console().print(f"installed {path}", highlight=False)


@pretrained.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--backbone", help="Whose file it is [default: found from the file name].")
@click.option("--sha256", "expected_sha256", help="Also require this SHA-256 of the file.")
def import_command(file: Path, backbone: str | None, expected_sha256: str | None) -> None:
    """Check FILE (downloaded elsewhere) against its published digest and copy it into the
    store; a file that does not match installs nothing."""
    from actrec.models.weight_install import import_weights

    path = import_weights(file, backbone=backbone, expected_sha256=expected_sha256)
    console().print(f"installed {path}", highlight=False)
