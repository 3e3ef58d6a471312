"""`actrec eval` as a library: evaluate a trained run under a protocol, and fuse streams.

evaluate_run      run + prepared data + protocol -> scores, metrics, RUN/eval/SPLIT-PROTOCOL/
                  (on one worker or several: actrec.evaluation.parts)
load_evaluation   a saved evaluation (its scores.npz and results.json) as a stream to fuse
saved_run_evaluation  a run's evaluation already on disk for the same protocol, or None
fuse_evaluations  streams' scores -> weighted fusion, its metrics and files
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from actrec.cluster.strategy import ClusterInfo, cluster_from_environment
from actrec.data.format.integrity import check_shard_sizes, data_loss_error
from actrec.errors import ConfigError, DatasetError
from actrec.evaluation.metrics import Metrics, classification_metrics
from actrec.evaluation.part_checks import split_rows
from actrec.evaluation.parts import DEFAULT_WAIT_SECONDS, evaluation_parts, wait_for_parts
from actrec.evaluation.protocols import Protocol
from actrec.evaluation.reports import RESULTS_FILE, write_evaluation
from actrec.evaluation.reuse import evaluation_request, saved_evaluation_folder
from actrec.evaluation.scores import (
    SCORES_FILE,
    VideoScores,
    fuse_video_scores,
    load_video_scores,
)
from actrec.evaluation.share import ShareInputs, score_share
from actrec.progress import NullProgress, Progress
from actrec.runs.trained import build_trained_model, load_trained_run, resolve_data_dir

EVAL_DIR = "eval"
DEFAULT_VIEW_BATCH = 32
MODALITY_WEIGHTS = {"rgb": 1.0, "flow": 1.5}  # TSN's RGB : flow fusion


@dataclass
class Evaluation:
    """One stream's (or the fusion's) evaluation: its scores, metrics (None when the split
    is unlabelled), the folder its files are in and what results.json says."""

    name: str
    scores: VideoScores
    metrics: Metrics | None
    out_dir: Path
    results: dict
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def modality(self) -> str | None:
        return self.results.get("modality")


def default_eval_dir(
    run_dir: Path, split: str, protocol: Protocol, checkpoint: str = "final"
) -> Path:
    suffix = "" if checkpoint == "final" else f"-{checkpoint}"
    return Path(run_dir) / EVAL_DIR / f"{split}-{protocol.name}{suffix}"


def _scores_or_data_error(data_dir: Path, split: str, compute):
    """compute(), with a read error of a damaged shard turned into a DatasetError naming it."""
    import tensorflow as tf

    try:
        return compute()
    except tf.errors.DataLossError as error:
        raise data_loss_error(data_dir, [split], error) from None


def _run_label_of_data_label(run, info, data_dir: Path):
    """int [K]: the run's class index of each of the data's labels when the data holds the
    run's classes in another order (matched by name), None in the same order; DatasetError
    naming the classes that differ otherwise."""
    import numpy as np

    from actrec.models.transfer import classifier_mapping  # Keras: `eval --fuse` goes without

    if tuple(info.classes) == tuple(run.classes):
        return None
    mapping = classifier_mapping(run.classes, info.classes)
    if mapping is not None:
        return np.asarray(mapping, np.int64)
    extra = [name for name in info.classes if name not in set(run.classes)]
    missing = [name for name in run.classes if name not in set(info.classes)]
    named = "; ".join(
        f"{what}: {', '.join(names[:5])}{', ...' if len(names) > 5 else ''}"
        for what, names in (("not in the run", extra), ("missing", missing))
        if names
    )
    raise DatasetError(
        f"{data_dir} has {len(info.classes)} classes that are not the {run.num_classes} "
        f"classes {run.run_dir} was trained on ({named or 'a class name repeated'}); give the "
        "--data it was trained on, or one prepared with the same class names (any order)"
    )


def _check_data(run, info, data_dir: Path, split: str) -> int:
    """The number of videos of `split`; DatasetError if it has none."""
    videos = info.num_videos.get(split, 0)
    if not videos:
        available = ", ".join(f"{name} ({count})" for name, count in info.num_videos.items())
        raise DatasetError(
            f"{data_dir} has no videos in split {split!r}; its splits: {available}; choose one "
            "with --split"
        )
    return videos


def evaluate_run(
    run_dir: Path | str,
    protocol: Protocol,
    *,
    data_dir: Path | str | None = None,
    split: str = "test",
    out_dir: Path | str | None = None,
    view_batch: int = DEFAULT_VIEW_BATCH,
    progress: Progress | None = None,
    checkpoint: str = "final",
    average: str = "logits",
    cluster: ClusterInfo | None = None,
    wait_seconds: float = DEFAULT_WAIT_SECONDS,
) -> Evaluation | None:
    """Evaluate the finished run in `run_dir` on `split` of the prepared data (default: the
    data it was trained on) under `protocol`; writes the files of
    actrec.evaluation.reports into out_dir (default RUN/eval/SPLIT-PROTOCOL, with "-best"
    for checkpoint "best").

    view_batch: views per forward pass (memory is bounded by it, whatever the protocol).
    checkpoint: "final" (final.weights.h5) or "best" (best.weights.h5).
    A shard of `split` whose size differs from the manifest, or that cannot be read, is a
    DatasetError naming it and the fix (actrec.data.format.integrity).
    average: what is averaged over a video's views, "logits" (the official TSN / TSM
        evaluation) or "softmax" (actrec.evaluation.scores).
    cluster: this process's place among the workers sharing the evaluation (default: from
        TF_CONFIG / Slurm, actrec.cluster.strategy). The videos are scored in parts, saved
        as they finish (actrec.evaluation.parts): a worker scores its share and returns
        None; the chief (worker 0, and a lone worker) waits for every part (up to
        wait_seconds without a new one, then a WorkerLostError naming the missing
        workers), writes the evaluation and returns it. Parts saved by an earlier attempt,
        on any number of workers, are not scored again. A saved part that is not the part
        asked for (other videos, labels or classes, non-finite scores, a damaged file, a
        request.json of another evaluation) is a ConfigError naming it and the fix, raised
        before anything is written (actrec.evaluation.part_checks).
    """
    import numpy as np

    # inside: both load OpenCV, which `eval --fuse` of saved scores does without
    from actrec.data.input.clip_spec import clip_spec, dataset_info
    from actrec.data.input.views import ViewSpec

    started = time.monotonic()
    progress = progress or NullProgress()
    cluster = cluster or cluster_from_environment()
    run = load_trained_run(run_dir, checkpoint)
    data_dir = resolve_data_dir(run, data_dir)
    info = dataset_info(data_dir)
    run_labels = _run_label_of_data_label(run, info, data_dir)
    num_videos = _check_data(run, info, data_dir, split)
    check_shard_sizes(data_dir, [split])
    num_segments = protocol.num_segments or run.recipe.data.num_segments
    clip = replace(clip_spec(run.recipe, training=False), num_segments=num_segments)
    spec = ViewSpec(clip, protocol.num_clips, protocol.num_crops)
    out_dir = (
        Path(out_dir)
        if out_dir is not None
        else default_eval_dir(run.run_dir, split, protocol, checkpoint)
    )
    request = evaluation_request(run, protocol, data_dir, split, average)
    expected = split_rows(data_dir, split, tuple(run.classes), average, spec.num_views)
    parts = evaluation_parts(out_dir, request, num_videos, expected)
    inputs = ShareInputs(data_dir, split, spec, view_batch, tuple(run.classes), average)
    _scores_or_data_error(
        data_dir,
        split,
        lambda: score_share(
            lambda: build_trained_model(run, num_segments),
            inputs,
            parts,
            cluster,
            progress,
            f"evaluating {run.name} ({protocol.name}, {split})",
        ),
    )
    if not cluster.is_chief:
        progress.message(
            f"{run.name}: this worker's share is saved in {parts.folder}; the chief "
            "(worker 0) writes the results"
        )
        return None
    wait_for_parts(parts, cluster.num_workers, wait_seconds, progress)
    scores = parts.merged(cluster.num_workers)
    if run_labels is not None:
        progress.message(
            f"{data_dir} holds the classes of {run.name} in another order: its labels are "
            "matched to the run's classes by name"
        )
        labels = scores.labels
        scores = replace(scores, labels=np.where(labels >= 0, run_labels[labels], labels))
    metrics = classification_metrics(scores) if scores.is_labelled else None
    results = {
        "name": run.name,
        "run": str(Path(run_dir).resolve()),
        "modality": run.modality,
        **request,
        "protocol_description": protocol.description,
        "checkpoint": checkpoint,
        "views_per_video": spec.num_views,
        "workers": cluster.num_workers,
        "seconds": round(time.monotonic() - started, 3),
    }
    files = write_evaluation(out_dir, scores, metrics, results)
    parts.remove()
    return Evaluation(run.name, scores, metrics, out_dir, results, files)


def saved_run_evaluation(
    run_dir: Path | str,
    protocol: Protocol,
    *,
    data_dir: Path | str | None = None,
    split: str = "test",
    checkpoint: str = "final",
    average: str = "logits",
) -> Evaluation | None:
    """The evaluation `evaluate_run` would make, loaded from its folder when that folder
    already holds it (same split, protocol, view average, data and weights file); else None.
    Reads no model and imports no TensorFlow."""
    run = load_trained_run(run_dir, checkpoint)
    request = evaluation_request(run, protocol, resolve_data_dir(run, data_dir), split, average)
    folder = default_eval_dir(run.run_dir, split, protocol, checkpoint)
    folder = saved_evaluation_folder(folder, request)
    return None if folder is None else load_evaluation(folder)


def load_evaluation(path: Path | str) -> Evaluation:
    """A saved evaluation: `path` is its folder or its scores.npz (results.json beside it
    supplies the name and modality when present)."""
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    scores = load_video_scores(path)
    results: dict = {}
    try:
        loaded = json.loads((folder / RESULTS_FILE).read_text(encoding="utf-8"))
        results = loaded if isinstance(loaded, dict) else {}
    except (OSError, ValueError):
        pass
    name = str(results.get("name") or folder.name)
    metrics = classification_metrics(scores) if scores.is_labelled else None
    return Evaluation(name, scores, metrics, folder, results)


def fusion_weights(streams: Sequence[Evaluation], weights: Sequence[float] | None) -> tuple:
    """`weights` as given, else TSN's 1 (RGB) : 1.5 (flow) by each stream's modality, else
    equal weights (modality unknown)."""
    if weights is not None:
        if len(weights) != len(streams):
            raise ConfigError(
                f"--weights gives {len(weights)} numbers for {len(streams)} streams; give one "
                "per stream, in the order of --fuse (e.g. --weights 1,1.5)"
            )
        return tuple(float(weight) for weight in weights)
    modalities = [stream.modality for stream in streams]
    if all(modality in MODALITY_WEIGHTS for modality in modalities):
        return tuple(MODALITY_WEIGHTS[modality] for modality in modalities)
    return (1.0,) * len(streams)


def fuse_evaluations(
    streams: Sequence[Evaluation],
    weights: Sequence[float] | None = None,
    out_dir: Path | str | None = None,
) -> Evaluation:
    """The weighted fusion of the streams' scores, its metrics, and its files in out_dir
    (default: beside the first stream's folder, named fused-NAME1-NAME2)."""
    if len(streams) < 2:
        raise ConfigError("fusion needs at least two streams; give --fuse A B")
    names = [stream.name for stream in streams]
    weights = fusion_weights(streams, weights)
    scores = fuse_video_scores([stream.scores for stream in streams], weights, names)
    metrics = classification_metrics(scores) if scores.is_labelled else None
    first = streams[0].results
    results = {
        "name": "fused",
        "streams": [
            {
                "name": stream.name,
                "modality": stream.modality,
                "weight": weight,
                "scores": str(stream.out_dir / SCORES_FILE),
            }
            for stream, weight in zip(streams, weights, strict=True)
        ],
        "weights": list(weights),
        "modality": "+".join(str(stream.modality or "?") for stream in streams),
        "split": first.get("split"),
        "protocol": first.get("protocol"),
        "views_per_video": first.get("views_per_video"),
        "average": scores.average,
    }
    if out_dir is None:
        out_dir = streams[0].out_dir.parent / f"fused-{'-'.join(names)}"
    out_dir = Path(out_dir)
    files = write_evaluation(out_dir, scores, metrics, results)
    return Evaluation("fused", scores, metrics, out_dir, results, files)
