"""What `actrec pretrained list` shows: one row per known weight file, as JSON or a table."""

from __future__ import annotations

from actrec_cli.console import console
from rich.table import Table

from actrec.backbones.pretrained import all_weights_status, check_found_file
from actrec.backbones.weight_store import store_directory
from actrec.errors import WeightsError


def weights_rows(verify: bool) -> list[dict]:
    """Each known weight file: backbone, file, URL, published digest, where it is (and with
    `verify`, its checked digest or the mismatch)."""
    rows = []
    for status in all_weights_status():
        weights = status.spec.weights
        row = {
            "backbone": status.spec.name,
            "file": weights.file_name,
            "url": weights.url,
            "hash_algorithm": weights.hash_algorithm,
            "file_hash": weights.file_hash,
            "location": status.location,
            "path": None if status.path is None else str(status.path),
        }
        if verify and status.path is not None:
            try:
                row["checked"] = check_found_file(status)
            except WeightsError as error:
                row["mismatch"] = str(error)
        rows.append(row)
    return rows


def print_weights_table(rows: list[dict], urls: bool) -> None:
    """The rows as a table (with `urls`, a URL column), then each digest mismatch."""
    table = Table(title=f"ImageNet no-top weights (store: {store_directory()})")
    columns = ["backbone", "file", "published digest", "status"] + (["url"] if urls else [])
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        digest = "none published"
        if row["hash_algorithm"]:
            digest = f"{row['hash_algorithm']} {row['file_hash']}"
        if row["path"] is None:
            state = "[yellow]missing[/]"
        else:
            state = f"[green]{row['location']}[/]: {row['path']}"
        if "checked" in row:
            state += f" [green](checked: {row['checked']})[/]"
        if "mismatch" in row:
            state += " [bold red](DIGEST MISMATCH)[/]"
        cells = [row["backbone"], row["file"], digest, state]
        table.add_row(*cells, *([row["url"]] if urls else []))
    console().print(table)
    for row in rows:
        if "mismatch" in row:
            console().print(f"[bold red]mismatch:[/] {row['mismatch']}", highlight=False)
