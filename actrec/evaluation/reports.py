"""The files of one evaluation, written atomically into its folder.

results.json      protocol, split, metrics (top1, top5, mean_class_accuracy), views
per_class.csv     class, videos, correct, accuracy
predictions.csv   video_id, label, prediction, correct, probability of the prediction
confusion.png     row-normalised confusion matrix
scores.npz        per-video scores (actrec.evaluation.scores), for fusion
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np

from actrec.evaluation.metrics import Metrics
from actrec.evaluation.scores import SCORES_FILE, VideoScores, save_video_scores
from actrec.files.atomic import write_bytes_atomic, write_json_atomic, write_text_atomic

RESULTS_FILE = "results.json"
PER_CLASS_FILE = "per_class.csv"
PREDICTIONS_FILE = "predictions.csv"
CONFUSION_FILE = "confusion.png"
# Class names are written on the confusion matrix's axes up to this many classes.
MAX_LABELLED_CLASSES = 40


def _csv_text(header: list[str], rows: list[list]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def per_class_csv(scores: VideoScores, metrics: Metrics) -> str:
    rows = []
    for index, name in enumerate(scores.classes):
        videos = int(metrics.per_class_videos[index])
        correct = int(metrics.confusion[index, index])
        accuracy = metrics.per_class_accuracy[index]
        rows.append([name, videos, correct, "" if math.isnan(accuracy) else f"{accuracy:.6f}"])
    return _csv_text(["class", "videos", "correct", "accuracy"], rows)


def predictions_csv(scores: VideoScores) -> str:
    predictions = scores.predictions
    probabilities = scores.probabilities
    rows = []
    for row, video in enumerate(scores.video_ids):
        label, predicted = int(scores.labels[row]), int(predictions[row])
        rows.append(
            [
                video,
                scores.classes[label] if label >= 0 else "",
                scores.classes[predicted],
                int(label == predicted) if label >= 0 else "",
                f"{probabilities[row, predicted]:.6f}",
            ]
        )
    return _csv_text(["video_id", "label", "prediction", "correct", "probability"], rows)


def confusion_png(confusion: np.ndarray, classes: tuple[str, ...], title: str) -> bytes:
    """A row-normalised confusion matrix as PNG bytes (matplotlib, no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    num_classes = len(classes)
    totals = confusion.sum(axis=1, keepdims=True)
    normalised = np.divide(confusion, np.maximum(totals, 1))
    side = min(4 + 0.3 * num_classes, 30)
    figure, axes = pyplot.subplots(figsize=(side + 1.5, side))
    image = axes.imshow(normalised, cmap="Blues", vmin=0, vmax=1, interpolation="nearest")
    figure.colorbar(image, ax=axes, fraction=0.046, pad=0.04, label="share of the true class")
    if num_classes <= MAX_LABELLED_CLASSES:
        positions = np.arange(num_classes)
        axes.set_xticks(positions, classes, rotation=90, fontsize=8)
        axes.set_yticks(positions, classes, fontsize=8)
    if num_classes <= 20:
        for row in range(num_classes):
            for column in range(num_classes):
                if confusion[row, column]:
                    colour = "white" if normalised[row, column] > 0.5 else "black"
                    axes.text(
                        column,
                        row,
                        int(confusion[row, column]),
                        ha="center",
                        va="center",
                        fontsize=7,
                        color=colour,
                    )
    axes.set_xlabel("predicted class")
    axes.set_ylabel("true class")
    axes.set_title(title)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    pyplot.close(figure)
    return buffer.getvalue()


def write_evaluation(
    out_dir: Path, scores: VideoScores, metrics: Metrics | None, results: dict
) -> dict[str, Path]:
    """Write every file of one evaluation into out_dir; returns name -> path.

    results: what results.json holds besides the metrics (protocol, split, runs...).
    metrics None (an unlabelled split): scores and predictions only.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"scores": out_dir / SCORES_FILE, "predictions": out_dir / PREDICTIONS_FILE}
    save_video_scores(scores, paths["scores"])
    write_text_atomic(paths["predictions"], predictions_csv(scores))
    if metrics is not None:
        paths["per_class"] = out_dir / PER_CLASS_FILE
        paths["confusion"] = out_dir / CONFUSION_FILE
        write_text_atomic(paths["per_class"], per_class_csv(scores, metrics))
        title = f"{results.get('name', '')} {results.get('protocol', '')}".strip()
        write_bytes_atomic(
            paths["confusion"], confusion_png(metrics.confusion, scores.classes, title)
        )
    paths["results"] = out_dir / RESULTS_FILE
    content = dict(results)
    if metrics is not None:
        content.update(metrics.summary())
    write_json_atomic(paths["results"], content)
    return paths
