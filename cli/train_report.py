"""What `actrec train` prints: the batch table of `--batch-size auto` and how the run ended."""

from __future__ import annotations

from pathlib import Path

from actrec_cli.console import console


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

    from actrec.train.memory.units import format_bytes

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
