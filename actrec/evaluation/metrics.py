"""Classification metrics of per-video scores, with scikit-learn.

top-1 and top-5 accuracy over videos; mean class accuracy = the mean over the classes
present in the labels of each class's accuracy (its recall: scikit-learn's balanced
accuracy); the confusion matrix [K, K] (rows: true class, columns: predicted).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from actrec.errors import ConfigError
from actrec.evaluation.scores import VideoScores

TOP_K = 5


@dataclass(frozen=True)
class Metrics:
    """top5 is top-min(5, K) accuracy; per_class_accuracy is NaN for classes with no video."""

    num_videos: int
    top1: float
    top5: float
    mean_class_accuracy: float
    confusion: np.ndarray  # int64 [K, K]
    per_class_accuracy: np.ndarray  # float64 [K]
    per_class_videos: np.ndarray  # int64 [K]

    def summary(self) -> dict:
        return {
            "num_videos": self.num_videos,
            "top1": self.top1,
            "top5": self.top5,
            "mean_class_accuracy": self.mean_class_accuracy,
        }


def classification_metrics(scores: VideoScores) -> Metrics:
    """Metrics of labelled scores; ConfigError for an unlabelled split."""
    from sklearn.metrics import accuracy_score, confusion_matrix, top_k_accuracy_score

    if not scores.is_labelled:
        raise ConfigError(
            "the split has unlabelled videos (label -1), so accuracy cannot be computed; its "
            "scores are saved for fusion or submission"
        )
    num_classes = len(scores.classes)
    all_classes = np.arange(num_classes)
    predictions = scores.predictions
    confusion = confusion_matrix(scores.labels, predictions, labels=all_classes)  # [K, K]
    per_class_videos = confusion.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_class_accuracy = np.diag(confusion) / per_class_videos  # NaN where no video
    if num_classes <= TOP_K:  # every class is among the top 5
        top5 = 1.0
    else:
        top5 = top_k_accuracy_score(scores.labels, scores.scores, k=TOP_K, labels=all_classes)
    return Metrics(
        num_videos=len(scores.labels),
        top1=float(accuracy_score(scores.labels, predictions)),
        top5=float(top5),
        mean_class_accuracy=float(_mean_class_accuracy(scores.labels, predictions)),
        confusion=confusion.astype(np.int64),
        per_class_accuracy=per_class_accuracy.astype(np.float64),
        per_class_videos=per_class_videos.astype(np.int64),
    )


def _mean_class_accuracy(labels: np.ndarray, predictions: np.ndarray) -> float:
    """Balanced accuracy over the classes present in `labels` (predictions of classes
    absent from the labels count as errors, not as classes)."""
    import warnings

    from sklearn.metrics import balanced_accuracy_score

    with warnings.catch_warnings():
        # "y_pred contains classes not in y_true": those rows are excluded, as intended.
        warnings.simplefilter("ignore", UserWarning)
        return balanced_accuracy_score(labels, predictions)


def per_class_of_confusion(confusion: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(accuracy float64 [K], NaN for a class with no video; videos int64 [K]) of a
    confusion matrix [K, K] (rows: true class)."""
    videos = confusion.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = np.diag(confusion) / videos
    return accuracy.astype(np.float64), videos.astype(np.int64)


def most_confused(
    confusion: np.ndarray, classes: tuple[str, ...], count: int = 5
) -> list[tuple[str, str, int]]:
    """The `count` largest off-diagonal cells of a confusion matrix [K, K]: (true class,
    predicted class, videos), most videos first; cells of 0 are left out."""
    off_diagonal = np.array(confusion, dtype=np.int64)
    np.fill_diagonal(off_diagonal, 0)
    order = np.argsort(-off_diagonal, axis=None, kind="stable")[:count]
    pairs = []
    for flat in order:
        true, predicted = np.unravel_index(flat, off_diagonal.shape)
        if off_diagonal[true, predicted] > 0:
            pairs.append((classes[true], classes[predicted], int(off_diagonal[true, predicted])))
    return pairs
