"""What `actrec eval` prints: the accuracy of each stream (and their fusion) and where the
results are."""

from __future__ import annotations

from actrec_cli.console import console
from rich.table import Table

from actrec.evaluation.per_class import classes_by_recall

# Rows of the per-class table printed (the worst first); per_class.csv has every class.
SHOWN_CLASSES = 20


def percent_text(value: float | None) -> str:
    """0.8123 -> "81.23"; None (an unlabelled split) -> "-"."""
    return "-" if value is None else f"{100 * value:.2f}"


def summary_table(evaluations, title: str) -> Table:
    """One row per stream: top-1, top-5, mean class accuracy, videos and views per video."""
    table = Table(title=title)
    for column in ("stream", "modality", "top-1 %", "top-5 %", "mean class %", "videos", "views"):
        table.add_column(column, justify="left" if column in ("stream", "modality") else "right")
    for evaluation in evaluations:
        metrics = evaluation.metrics
        views = evaluation.results.get("views_per_video")
        table.add_row(
            evaluation.name,
            evaluation.modality or "-",
            percent_text(metrics.top1 if metrics else None),
            percent_text(metrics.top5 if metrics else None),
            percent_text(metrics.mean_class_accuracy if metrics else None),
            str(len(evaluation.scores.video_ids)),
            "-" if views is None else str(views),
        )
    return table


def per_class_table(evaluation, shown: int = SHOWN_CLASSES) -> Table | None:
    """The classes of `evaluation` by recall, worst first (at most `shown`); None when
    the split is unlabelled."""
    if evaluation.metrics is None:
        return None
    rows = classes_by_recall(evaluation.metrics, evaluation.scores.classes)
    title = f"{evaluation.name}: per class, worst recall first"
    if len(rows) > shown:
        title += f" ({shown} of {len(rows)}; all in per_class.csv)"
    table = Table(title=title)
    for column in ("class", "videos", "correct", "recall %"):
        table.add_column(column, justify="left" if column == "class" else "right")
    for row in rows[:shown]:
        table.add_row(row.name, str(row.videos), str(row.correct), percent_text(row.recall))
    return table


def print_evaluations(evaluations, protocol_name: str, split: str) -> None:
    """The summary table, how views and streams were averaged, and each result folder."""
    title = f"{protocol_name} on {evaluations[0].results.get('split', split)}"
    console().print(summary_table(evaluations, title))
    classes = per_class_table(evaluations[-1])
    if classes is not None:
        console().print(classes)
    console().print(
        f"views and streams averaged as {evaluations[-1].scores.average}; mean class accuracy "
        "is the figure TSN reports for UCF101 and HMDB51 (tools/eval_net.py)",
        highlight=False,
        soft_wrap=True,
    )
    if evaluations[-1].metrics is None:
        console().print("the split is unlabelled: scores saved, no accuracy")
    for evaluation in evaluations:
        console().print(f"{evaluation.name}: {evaluation.out_dir}", soft_wrap=True)
