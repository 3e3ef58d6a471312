"""What `actrec train` prints: the batch table of `--batch-size auto`, how the run ended, its
last validation per class, and the commands that come next."""

from __future__ import annotations

import shlex
from pathlib import Path

from actrec_cli.console import console

from actrec.evaluation.metrics import most_confused, per_class_of_confusion
from actrec.train.memory.units import format_bytes


def print_outcome(summary, run_dir: Path, stop_after_steps: int | None) -> None:
    """Preempted (checkpoint saved), stopped after --stop-after-steps, or trained: epochs,
    steps, time, validation accuracy and where the weights are."""
    if summary.preempted:
        console().print(
            f"preempted: checkpoint saved in {run_dir}; re-run with --resume to continue",
            soft_wrap=True,
        )
        return
    if summary.stopped_early:
        console().print(
            f"stopped after {stop_after_steps} steps at step {summary.global_step}; "
            f"continue with --resume",
            soft_wrap=True,
        )
        return
    accuracy = summary.validation.get("accuracy")
    shown = f", validation accuracy {accuracy:.3f}" if accuracy is not None else ""
    console().print(
        f"trained {summary.epochs_done} epochs ({summary.global_step} steps) in "
        f"{summary.elapsed_seconds:.0f} s{shown}; weights: {summary.weights_path}",
        soft_wrap=True,
    )


def print_batch_decision(decision) -> None:
    """The table `--batch-size auto` chose from, and what it chose."""
    from rich.table import Table

    budget = format_bytes(decision.budget_bytes) if decision.budget_bytes else "device memory"
    table = Table(
        title=f"per-replica batch probed on {decision.device.upper()}, budget {budget}"
        + (", remat" if decision.remat else ""),
        title_justify="left",
    )
    for column in ("batch", "peak", "fits", "step ms", "model ms", "clips/s"):
        table.add_column(column, justify="left" if column == "fits" else "right")
    table.add_column("")
    for row in decision.rows():
        table.add_row(
            str(row["batch"]),
            row["peak"],
            row["fits"],
            "-" if row["step_ms"] is None else f"{row['step_ms']:.1f}",
            "-" if row["model_ms"] is None else f"{row['model_ms']:.1f}",
            "-" if row["clips_per_second"] is None else f"{row['clips_per_second']:.1f}",
            "<- chosen" if row["chosen"] else "",
        )
    console().print(table)
    console().print(f"chosen: {decision.summary()}", soft_wrap=True, highlight=False)


WEAKEST_CLASSES_SHOWN = 10


def print_validation_classes(summary, classes: list[str]) -> None:
    """The last validation's per-class accuracy (every class up to WEAKEST_CLASSES_SHOWN,
    else the weakest) and the classes most confused."""
    from rich.table import Table

    if summary.validation_confusion is None:
        return
    accuracy, videos = per_class_of_confusion(summary.validation_confusion)
    order = sorted(range(len(classes)), key=lambda k: (-1 if videos[k] == 0 else accuracy[k], k))
    shown = order[:WEAKEST_CLASSES_SHOWN]
    title = "validation accuracy per class" + (
        f" (the {len(shown)} weakest of {len(classes)})" if len(shown) < len(classes) else ""
    )
    table = Table(title=title, title_justify="left")
    for column in ("class", "accuracy", "videos"):
        table.add_column(column, justify="left" if column == "class" else "right")
    for k in shown:
        shown_accuracy = "-" if videos[k] == 0 else f"{accuracy[k]:.3f}"
        table.add_row(classes[k], shown_accuracy, str(videos[k]))
    console().print(table)
    pairs = most_confused(summary.validation_confusion, tuple(classes))
    if pairs:
        console().print(
            "most confused: "
            + "; ".join(f"{true} -> {predicted} ({count})" for true, predicted, count in pairs),
            soft_wrap=True,
            highlight=False,
        )


def print_next_commands(run_dir: Path, validated: bool) -> None:
    """The eval / export / predict commands for this run (best weights when it validated)."""
    run = shlex.quote(str(run_dir))
    export = shlex.quote(f"{run_dir}-export")
    best = " --checkpoint best" if validated else ""
    console().print(
        "next:\n"
        f"  actrec eval {run}{best}  # the test split: accuracy per class, confusion matrix\n"
        f"  actrec export {run} --out {export}{best}\n"
        f"  actrec predict VIDEO --model {export}",
        soft_wrap=True,
        highlight=False,
    )
