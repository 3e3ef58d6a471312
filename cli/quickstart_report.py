"""What `actrec quickstart` prints: its stages, the accuracy of each stream and its
artefacts."""

from __future__ import annotations

from rich.table import Table

from actrec.quickstart.stages import STAGES

STREAM_LABELS = {
    "rgb": "RGB TSN",
    "flow": "flow TSN",
    "tsm": "RGB TSM (distilled)",
    "fused": "TSM + flow (fused)",
}


def summary_tables(result) -> list[Table]:
    """The stages with their seconds, the test accuracy of each stream, the artefacts."""
    stages = Table(title="stages")
    stages.add_column("stage")
    stages.add_column("seconds", justify="right")
    descriptions = dict(STAGES)
    for name, seconds in result.seconds.items():
        stages.add_row(descriptions[name], f"{seconds:.1f}")
    stages.add_row("[bold]total[/]", f"[bold]{result.total_seconds:.1f}[/]")

    accuracy = Table(title="test accuracy (centre view)")
    accuracy.add_column("stream")
    accuracy.add_column("top-1 %", justify="right")
    for name, value in result.accuracies.items():
        shown = f"{100 * value:.1f}"
        label = STREAM_LABELS.get(name, name)
        accuracy.add_row(label, f"[bold]{shown}[/]" if name == "fused" else shown)

    artefacts = Table(title="artefacts")
    artefacts.add_column("what")
    artefacts.add_column("where", overflow="fold")
    for name, path in result.artefacts.items():
        artefacts.add_row(name, str(path))
    return [stages, accuracy, artefacts]
