"""What `actrec pretrained convert` prints: the run written, each setting and its origin."""

from __future__ import annotations

from actrec_cli.console import console
from rich.table import Table

from actrec.published.convert import RECORD_KEY, settings_table


def print_conversion(conversion) -> None:
    """The settings table (value and where it came from), the classes, notes, next steps."""
    record = conversion.record[RECORD_KEY]
    table = Table(title=f"{record['file_name']} ({record['layout']} layout)")
    for column in ("setting", "value", "from"):
        table.add_column(column)
    for row in settings_table(conversion):
        table.add_row(*row)
    out = console()
    out.print(table)
    classes = conversion.classes
    out.print(
        f"classes: {len(classes)} ({record['classes']}): {', '.join(classes[:3])}, ...",
        highlight=False,
    )
    for note in conversion.notes:
        out.print(f"[yellow]note:[/] {note}", highlight=False)
    out.print(f"wrote {conversion.run_dir} (sha256 {record['sha256'][:12]}...)", highlight=False)
    out.print(
        f"next: actrec eval {conversion.run_dir} --data PREPARED, or actrec train --recipe "
        f"RECIPE --init-from {conversion.run_dir}",
        highlight=False,
    )
