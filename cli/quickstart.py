"""`actrec quickstart`: the whole pipeline on the built-in synthetic set, in minutes on a CPU."""

from __future__ import annotations

from pathlib import Path

import click
from actrec_cli.console import console, import_tensorflow_quietly, progress_for
from actrec_cli.quickstart_report import summary_tables

from actrec.quickstart.stages import quickstart_threads_per_op, run_quickstart

# actrec.quickstart.SIZES (not imported here: it loads OpenCV, and `actrec --help` must not).
SIZE_NAMES = ("full", "small")


@click.command()
@click.option(
    "--workdir",
    type=click.Path(path_type=Path),
    default=Path("actrec-quickstart"),
    show_default=True,
    help="Folder for everything the quickstart makes; re-running continues in it.",
)
@click.option(
    "--size",
    type=click.Choice(SIZE_NAMES),
    default="full",
    show_default=True,
    help="full: the README's quickstart (a few minutes); small: a reduced run (about a minute).",
)
def quickstart(workdir, size):
    """Generate the synthetic set, prepare it with optical flow, train an RGB TSN, a flow TSN
    and an RGB TSM distilled from it, evaluate them and the TSM + flow fusion, export that
    two-stream SavedModel and predict a new video."""
    import_tensorflow_quietly(threads_per_op=quickstart_threads_per_op())

    console().print(f"actrec quickstart in {workdir} ({size})", soft_wrap=True)
    result = run_quickstart(workdir, size, progress_for(None))
    for table in summary_tables(result):
        console().print(table)
    prediction = result.prediction
    top = prediction["result"].top_k[0] if prediction["result"].top_k else None
    if top is not None:
        verdict = "[green]right[/]" if top[0] == prediction["true_class"] else "[red]wrong[/]"
        console().print(
            f"prediction for {prediction['video']}: {top[0]} ({100 * top[1]:.1f} %), true class "
            f"{prediction['true_class']}: {verdict}",
            soft_wrap=True,
        )
    fused = 100 * result.accuracies["fused"]
    console().print(
        f"fused accuracy {fused:.1f} % in {result.total_seconds:.0f} s", highlight=False
    )
    if not result.reached_expected_accuracy:
        console().print(
            f"[yellow]below the expected {100 * result.expected_fused_accuracy:.0f} %[/]: the "
            "quickstart trains from scratch in a few minutes; see docs/troubleshooting.md"
        )
    console().print(
        f"next: `actrec predict VIDEO --model {workdir / 'export'}`; the README shows the same "
        "workflow on UCF101, HMDB51 and Kinetics",
        soft_wrap=True,
    )
