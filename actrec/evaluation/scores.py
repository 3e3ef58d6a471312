"""Per-video scores: computed over streamed views, saved, loaded and fused.

A video's score is the average over its views of the model's logits ("logits", as the
official evaluations do: TSN tools/eval_net.py scores `fc-action` and eval_scores.py
averages them without softmax; TSM test_models.py averages logits unless --softmax) or of
its softmax ("softmax").

A scores file (`scores.npz`) holds video_ids string [N], labels int [N] (-1 unlabelled),
scores float64 [N, K] (averaged over the views), classes string [K], num_views int [N] and
average (a string: "logits" or "softmax"; files from before it was recorded averaged
softmax); it is what `actrec eval --fuse` combines without re-running models.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from actrec.errors import ConfigError, DatasetError
from actrec.evaluation.npz_arrays import read_arrays
from actrec.files.atomic import write_bytes_atomic
from actrec.models.score_fusion import check_average, fuse_scores
from actrec.progress import NullProgress, Progress

SCORES_FILE = "scores.npz"


@dataclass(frozen=True)
class VideoScores:
    """Scores of N videos over K classes (view-averaged logits or softmax, by `average`);
    row i is video_ids[i]."""

    video_ids: tuple[str, ...]
    labels: np.ndarray  # int64 [N]
    scores: np.ndarray  # float64 [N, K]
    classes: tuple[str, ...]
    num_views: np.ndarray  # int64 [N]
    average: str = "softmax"

    @property
    def predictions(self) -> np.ndarray:
        """int64 [N]: the top-1 class of every video."""
        return np.argmax(self.scores, axis=1)

    @property
    def probabilities(self) -> np.ndarray:
        """float64 [N, K]: the scores as probabilities (softmax of averaged logits)."""
        if self.average == "softmax":
            return self.scores
        shifted = np.exp(self.scores - self.scores.max(axis=1, keepdims=True))
        return shifted / shifted.sum(axis=1, keepdims=True)

    @property
    def is_labelled(self) -> bool:
        return bool(len(self.labels)) and bool(np.all(self.labels >= 0))


def compute_video_scores(
    model,
    views,
    num_videos: int,
    classes: Sequence[str],
    views_per_video: int,
    progress: Progress | None = None,
    average: str = "logits",
    *,
    parts: Sequence[range] = (),
    save_part: Callable[[int, VideoScores], None] | None = None,
) -> VideoScores:
    """Average model(view) ("logits") or softmax(model(view)) ("softmax") over every view of
    every video.

    views: batches (views [B, T, crop, crop, C], labels [B], positions [B], video_ids [B])
        from `actrec.data.input.views.build_view_dataset`.
    num_videos: N, the videos of the split (positions are 0 .. N-1).
    views_per_video: V; every video must get exactly V views. Progress counts videos done.
    parts: ranges of positions; save_part(i, scores of parts[i]'s videos) is called as soon
        as every video of parts[i] has its V views (actrec.evaluation.parts saves them).
    """
    import tensorflow as tf

    check_average(average)
    progress = progress or NullProgress()
    num_classes = len(classes)

    # One trace per call, whatever the last batch's size: TensorFlow counts the traces of
    # this function across calls and warns of excessive retracing when a process evaluates
    # several runs (the quickstart's three streams).
    @tf.function(input_signature=[views.element_spec[0]], autograph=False)
    def view_scores(batch):
        logits = tf.cast(model(batch, training=False), tf.float32)  # [B, K]
        return logits if average == "logits" else tf.nn.softmax(logits, axis=-1)

    sums = np.zeros((num_videos, num_classes), np.float64)
    counts = np.zeros(num_videos, np.int64)
    labels = np.full(num_videos, -1, np.int64)
    video_ids = [""] * num_videos
    done = 0

    def scores_of(rows: slice) -> VideoScores:
        return VideoScores(
            video_ids=tuple(video_ids[rows]),
            labels=labels[rows],
            scores=sums[rows] / counts[rows, None],
            classes=tuple(classes),
            num_views=counts[rows],
            average=average,
        )

    unsaved = list(range(len(parts))) if save_part is not None else []
    for batch, batch_labels, positions, ids in views:
        positions = positions.numpy()
        if positions.max(initial=-1) >= num_videos:
            raise DatasetError(
                f"the split has more records than its manifest's {num_videos} videos; run "
                "`actrec inspect` on the prepared folder"
            )
        output = view_scores(batch).numpy().astype(np.float64)  # [B, K]
        np.add.at(sums, positions, output)
        np.add.at(counts, positions, 1)
        labels[positions] = batch_labels.numpy()
        for position, video_id in zip(positions, ids.numpy(), strict=True):
            video_ids[position] = video_id.decode("utf-8")
        finished = int(np.count_nonzero(counts == views_per_video))
        complete = [index for index in unsaved if _complete(counts, parts[index], views_per_video)]
        for index in complete:
            unsaved.remove(index)
            save_part(index, scores_of(slice(parts[index].start, parts[index].stop)))
        progress.advance(finished - done, views=len(positions))
        done = finished
    if not np.all(counts == views_per_video):
        raise DatasetError(
            f"{int(np.count_nonzero(counts != views_per_video))} of the split's {num_videos} "
            f"videos did not get their {views_per_video} views; run `actrec inspect` on the "
            "prepared folder"
        )
    return scores_of(slice(None))


def _complete(counts: np.ndarray, rows: range, views_per_video: int) -> bool:
    return bool(np.all(counts[rows.start : rows.stop] == views_per_video))


def save_video_scores(scores: VideoScores, path: Path) -> None:
    """Write `scores` to `path` (.npz) atomically."""
    buffer = io.BytesIO()
    np.savez(
        buffer,
        video_ids=np.array(scores.video_ids, dtype=str),
        labels=scores.labels,
        scores=scores.scores,
        classes=np.array(scores.classes, dtype=str),
        num_views=scores.num_views,
        average=np.array(scores.average),
    )
    write_bytes_atomic(path, buffer.getvalue())


def load_video_scores(path: Path | str) -> VideoScores:
    """The scores saved at `path` (a scores.npz, or a folder holding one)."""
    path = Path(path)
    if path.is_dir():
        path = path / SCORES_FILE

    try:
        content = read_arrays(path, _KINDS, _check_shapes, optional=("average",))
    except ValueError as error:
        raise ConfigError(
            f"{path}: not a scores file written by `actrec eval` ({error}); give a "
            f"{SCORES_FILE} or the eval folder holding it"
        ) from None
    return VideoScores(
        video_ids=tuple(str(video) for video in content["video_ids"]),
        labels=content["labels"].astype(np.int64),
        scores=content["scores"].astype(np.float64),
        classes=tuple(str(name) for name in content["classes"]),
        num_views=content["num_views"].astype(np.int64),
        average=str(content["average"]) if "average" in content else "softmax",
    )


_KINDS = {  # the dtype kinds of a scores file's arrays
    "video_ids": "U",
    "labels": "iu",
    "scores": "fiu",
    "classes": "U",
    "num_views": "iu",
    "average": "U",
}


def _check_shapes(shapes: dict[str, tuple[int, ...]]) -> None:
    """ValueError unless the declared shapes are those of N videos over K classes."""
    rows, classes = shapes["video_ids"], shapes["classes"]
    if len(rows) != 1 or len(classes) != 1:
        raise ValueError(f"video_ids of shape {rows} and classes of shape {classes}")
    wanted = {"labels": rows, "num_views": rows, "scores": (*rows, *classes), "average": ()}
    for name, shape in wanted.items():
        if name in shapes and shapes[name] != shape:
            raise ValueError(f"{name} of shape {shapes[name]}, not {shape}")


def fuse_video_scores(
    streams: Sequence[VideoScores], weights: Sequence[float], names: Sequence[str]
) -> VideoScores:
    """The weighted average of the streams' scores, video by video (matched by id).

    Every stream must cover the same videos with the same classes and labels, averaged the
    same way (logits or softmax); the rows follow the first stream's order.
    """
    first = streams[0]
    aligned = [first.scores]
    for stream, name in zip(streams[1:], names[1:], strict=True):
        if stream.average != first.average:
            raise ConfigError(
                f"cannot fuse {names[0]} (views averaged as {first.average}) and {name} "
                f"(averaged as {stream.average}): evaluate both with the same --average"
            )
        if stream.classes != first.classes:
            raise ConfigError(
                f"cannot fuse {names[0]} and {name}: their classes differ; fuse runs trained "
                "on the same dataset"
            )
        if set(stream.video_ids) != set(first.video_ids):
            missing = sorted(set(first.video_ids) ^ set(stream.video_ids))[:3]
            raise ConfigError(
                f"cannot fuse {names[0]} and {name}: they scored different videos (e.g. "
                f"{', '.join(missing)}); evaluate both on the same data and split"
            )
        row_of = {video: row for row, video in enumerate(stream.video_ids)}
        order = np.array([row_of[video] for video in first.video_ids], np.int64)
        if not np.array_equal(stream.labels[order], first.labels):
            raise ConfigError(f"cannot fuse {names[0]} and {name}: their labels differ")
        aligned.append(stream.scores[order])
    return VideoScores(
        video_ids=first.video_ids,
        labels=first.labels,
        scores=fuse_scores(aligned, weights),
        classes=first.classes,
        num_views=first.num_views,
        average=first.average,
    )


def concatenate_video_scores(pieces: Sequence[VideoScores]) -> VideoScores:
    """The rows of `pieces` one after another (the parts of one evaluation, in order)."""
    first = pieces[0]
    return VideoScores(
        video_ids=tuple(video for piece in pieces for video in piece.video_ids),
        labels=np.concatenate([piece.labels for piece in pieces]),
        scores=np.concatenate([piece.scores for piece in pieces]),
        classes=first.classes,
        num_views=np.concatenate([piece.num_views for piece in pieces]),
        average=first.average,
    )
