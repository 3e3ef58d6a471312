"""This worker's share of an evaluation: its parts (actrec.evaluation.parts) that are not
saved yet, scored in one pass of the view pipeline and saved one by one as they finish.
Its parts saved by an earlier attempt are skipped only if they are the parts asked for
(actrec.evaluation.part_checks); one that is not stops the worker, named with the fix,
before it scores anything."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from actrec.cluster.strategy import ClusterInfo
from actrec.evaluation.parts import EvaluationParts
from actrec.evaluation.scores import compute_video_scores
from actrec.progress import Progress


def worker_text(cluster: ClusterInfo) -> str:
    """ ", worker 1 of 2" on several workers, "" on one."""
    if cluster.num_workers == 1:
        return ""
    return f", worker {cluster.task_index} of {cluster.num_workers}"


@dataclass(frozen=True)
class ShareInputs:
    """What the share's views are: the prepared folder, split, views (a
    actrec.data.input.views.ViewSpec), views per forward pass, the run's classes and what
    is averaged over a video's views."""

    data_dir: Path
    split: str
    spec: object
    view_batch: int
    classes: tuple[str, ...]
    average: str


def score_share(
    make_model: Callable[[], object],
    inputs: ShareInputs,
    parts: EvaluationParts,
    cluster: ClusterInfo,
    progress: Progress,
    description: str,
) -> None:
    """Score and save the parts of this worker's share that are not saved yet.

    make_model: builds the model (not called when every part of the share is saved).
    Progress (`description`) counts the share's videos, those of parts saved by an earlier
    attempt first.
    """
    share = parts.share(cluster.task_index, cluster.num_workers)
    saved = parts.saved()
    pending = [part for part in share if part not in saved]
    reused = [part for part in share if part in saved]
    parts.check_request(cluster.num_workers)
    for part in reused:  # ConfigError naming one that is not the part asked for
        parts.load(part, cluster.num_workers)
    progress.start(description + worker_text(cluster), _videos(parts, share))
    try:
        if reused:
            progress.message(
                f"reusing {len(reused)} of the {len(share)} parts of this worker's share, "
                f"saved by an earlier attempt ({parts.folder})"
            )
            progress.advance(_videos(parts, reused))
        if pending:
            _score_parts(make_model(), inputs, parts, pending, progress)
    finally:
        progress.finish()


def _videos(parts: EvaluationParts, chosen: list[int]) -> int:
    return sum(len(parts.rows(part)) for part in chosen)


def _score_parts(model, inputs: ShareInputs, parts, pending: list[int], progress):
    """One view pipeline over the pending parts' videos; each part saved when complete."""
    # inside: views loads OpenCV, which `eval --fuse` of saved scores does without
    from actrec.data.input.views import build_view_dataset

    videos = [video for part in pending for video in parts.rows(part)]
    local_rows, start = [], 0
    for part in pending:  # each pending part's rows among `videos`
        local_rows.append(range(start, start + len(parts.rows(part))))
        start += len(parts.rows(part))
    views = build_view_dataset(
        inputs.data_dir, inputs.split, inputs.spec, inputs.view_batch, videos=videos
    )
    compute_video_scores(
        model,
        views,
        len(videos),
        inputs.classes,
        inputs.spec.num_views,
        progress,
        inputs.average,
        parts=local_rows,
        save_part=lambda index, scores: parts.save(pending[index], scores),
    )
