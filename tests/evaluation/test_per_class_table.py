"""`actrec eval`'s per-class table: the classes by recall, worst first, beside top-1 and mean
class accuracy."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from actrec.evaluation.metrics import Metrics
from actrec.evaluation.per_class import classes_by_recall

CLASSES = ["walk", "run", "jump", "swim"]


def metrics() -> Metrics:
    # rows: true class; walk 3/4, run 1/2, jump 2/2, swim no videos
    confusion = np.array([[3, 1, 0, 0], [1, 1, 0, 0], [0, 0, 2, 0], [0, 0, 0, 0]], np.int64)
    videos = confusion.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = np.diag(confusion) / videos
    return Metrics(8, 6 / 8, 1.0, (0.75 + 0.5 + 1.0) / 3, confusion, recall, videos)


def test_classes_come_worst_recall_first_and_classes_without_videos_are_left_out():
    rows = classes_by_recall(metrics(), CLASSES)
    assert [(row.name, row.videos, row.correct) for row in rows] == [
        ("run", 2, 1),
        ("walk", 4, 3),
        ("jump", 2, 2),
    ]
    assert [row.recall for row in rows] == [0.5, 0.75, 1.0]


def test_eval_prints_the_sorted_table_beside_top1_and_mean_class_accuracy():
    from actrec_cli.eval_tables import per_class_table, summary_table
    from rich.console import Console

    evaluation = SimpleNamespace(
        name="rgb",
        modality="rgb",
        metrics=metrics(),
        scores=SimpleNamespace(classes=CLASSES, video_ids=list(range(8))),
        results={"views_per_video": 1},
    )
    console = Console(width=120, record=True)
    console.print(summary_table([evaluation], "centre on test"))
    console.print(per_class_table(evaluation, shown=2))
    text = " ".join(console.export_text().split())  # titles wrap to the table's width
    assert "75.00" in text and "75.00" in text.split("mean class")[1]  # top-1, mean class
    assert "(2 of 3; all in per_class.csv)" in text
    table = text.split("worst recall first")[1]
    assert table.index("run") < table.index("walk") and "jump" not in table
    assert per_class_table(SimpleNamespace(metrics=None)) is None
