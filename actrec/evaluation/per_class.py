"""The per-class rows of an evaluation, worst recall first: what `actrec eval` shows beside
top-1 and mean class accuracy (per_class.csv keeps the classes' own order)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from actrec.evaluation.metrics import Metrics


@dataclass(frozen=True)
class ClassRecall:
    """One class: its videos, those predicted right, and recall = correct / videos."""

    name: str
    videos: int
    correct: int
    recall: float  # NaN for a class without videos


def classes_by_recall(metrics: Metrics, classes: Sequence[str]) -> list[ClassRecall]:
    """The classes with videos, ascending recall (ties: class order); classes without
    videos are left out (they have no recall)."""
    rows = []
    for index, name in enumerate(classes):
        recall = float(metrics.per_class_accuracy[index])
        if math.isnan(recall):
            continue
        correct = int(metrics.confusion[index, index])
        rows.append(ClassRecall(name, int(metrics.per_class_videos[index]), correct, recall))
    return sorted(rows, key=lambda row: row.recall)  # stable: class order within ties
