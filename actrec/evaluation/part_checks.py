"""A saved part (actrec.evaluation.parts) is merged, or skipped on resume, only if it is the
part asked for.

Its file must read as a scores file (a cut or damaged archive, a header declaring more rows
than the part has: refused before anything is allocated, actrec.evaluation.npz_arrays); its
video ids and labels must be the split's rows of that part, its classes the run's, its
scores [rows, classes] and finite, each video averaged over the protocol's views, the same
way; and the folder's request.json must be the evaluation being asked for. A part that is
not is a ConfigError naming the file, what it holds instead and the fix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from actrec.data.format.manifest import read_manifest, split_videos
from actrec.errors import ConfigError
from actrec.evaluation.npz_arrays import read_arrays
from actrec.evaluation.scores import VideoScores

SHOWN_MAX = 3  # values shown where a part's differ from what it should hold
_KINDS = {
    "video_ids": "U",
    "labels": "iu",
    "scores": "f",
    "classes": "U",
    "num_views": "iu",
    "average": "U",
}


@dataclass(frozen=True)
class SplitRows:
    """What the parts of one evaluation hold: the split's video ids and labels (the data's
    label indices, -1 unlabelled) in the split's order, the run's classes, the view average
    ("logits" or "softmax") and the views of every video."""

    video_ids: tuple[str, ...]
    labels: tuple[int, ...]
    classes: tuple[str, ...]
    average: str
    num_views: int


def split_rows(
    data_dir: Path, split: str, classes: tuple[str, ...], average: str, num_views: int
) -> SplitRows:
    """The SplitRows of `split` of the prepared folder `data_dir` (its manifest's videos,
    in the order the view pipeline reads them)."""
    videos = split_videos(data_dir, read_manifest(data_dir), split)
    return SplitRows(
        video_ids=tuple(str(video["id"]) for video in videos),
        labels=tuple(int(video["label"]) for video in videos),
        classes=tuple(classes),
        average=average,
        num_views=num_views,
    )


def read_part(
    path: Path, part: int, rows: range, expected: SplitRows | None, fix: str
) -> VideoScores:
    """Part `part`'s scores (the split's `rows`) read from `path`, checked against
    `expected` (row counts and shapes only when None); ConfigError naming the file, what
    it holds and `fix` (what to do) otherwise."""
    num_classes = None if expected is None else len(expected.classes)

    def check_shapes(shapes: dict[str, tuple[int, ...]]) -> None:
        if len(shapes["video_ids"]) != 1:
            raise ConfigError(
                f"{path} holds video_ids of shape {shapes['video_ids']}, not ({len(rows)},): {fix}"
            )
        if shapes["video_ids"][0] != len(rows):
            raise ConfigError(
                f"{path} holds {shapes['video_ids'][0]} videos, not the {len(rows)} of part "
                f"{part}: {fix}"
            )
        classes = shapes["classes"]
        if len(classes) != 1 or (num_classes is not None and classes[0] != num_classes):
            raise ConfigError(
                f"{path} scores {classes[0] if len(classes) == 1 else classes} classes, not "
                f"the run's {num_classes}: {fix}"
            )
        wanted = {
            "labels": (len(rows),),
            "num_views": (len(rows),),
            "scores": (len(rows), classes[0]),
            "average": (),
        }
        for name, shape in wanted.items():
            if shapes[name] != shape:
                raise ConfigError(
                    f"{path} holds {name} of shape {shapes[name]}, not {shape} (part {part}'s "
                    f"{len(rows)} videos): {fix}"
                )

    try:
        arrays = read_arrays(path, _KINDS, check_shapes)
    except ValueError as error:
        raise ConfigError(
            f"{path} is not a readable part of this evaluation's scores ({error}): {fix}"
        ) from None
    scores = VideoScores(
        video_ids=tuple(str(video) for video in arrays["video_ids"]),
        labels=arrays["labels"].astype(np.int64),
        scores=arrays["scores"].astype(np.float64),
        classes=tuple(str(name) for name in arrays["classes"]),
        num_views=arrays["num_views"].astype(np.int64),
        average=str(arrays["average"]),
    )
    _check_contents(path, part, scores, rows, expected, fix)
    return scores


def _check_contents(path, part, scores: VideoScores, rows: range, expected, fix) -> None:
    if expected is not None:
        wanted_ids = expected.video_ids[rows.start : rows.stop]
        if scores.video_ids != wanted_ids:
            raise ConfigError(
                f"{path} holds videos {_shown(scores.video_ids, wanted_ids)}, not part "
                f"{part}'s {_shown(wanted_ids, scores.video_ids)}: {fix}"
            )
        wanted_labels = expected.labels[rows.start : rows.stop]
        found_labels = tuple(int(label) for label in scores.labels)
        if found_labels != wanted_labels:
            row = _first_difference(found_labels, wanted_labels)
            raise ConfigError(
                f"{path} gives video {wanted_ids[row]} label {found_labels[row]}, where the "
                f"split has label {wanted_labels[row]}: {fix}"
            )
        if scores.classes != expected.classes:
            raise ConfigError(
                f"{path} scores the classes {_shown(scores.classes, expected.classes)}, not "
                f"the run's {_shown(expected.classes, scores.classes)}: {fix}"
            )
        if scores.average != expected.average:
            raise ConfigError(
                f"{path} averages {scores.average!r} over each video's views, not "
                f"{expected.average!r}: {fix}"
            )
        if not np.all(scores.num_views == expected.num_views):
            row = int(np.flatnonzero(scores.num_views != expected.num_views)[0])
            raise ConfigError(
                f"{path} averages {scores.num_views[row]} views of video "
                f"{scores.video_ids[row]}, not the protocol's {expected.num_views}: {fix}"
            )
    finite = np.isfinite(scores.scores).all(axis=1)
    if not finite.all():
        bad = [video for video, ok in zip(scores.video_ids, finite, strict=True) if not ok]
        raise ConfigError(
            f"{path} holds non-finite scores (NaN or infinity) for {len(bad)} of its "
            f"{len(rows)} videos ({_shown(tuple(bad), ())}): {fix}"
        )


def check_request(folder: Path, request_file: str, request: dict, fix: str) -> None:
    """ConfigError (ending with `fix`) unless folder/request_file records `request`, or the
    folder holds no part yet."""
    path = folder / request_file
    if not folder.is_dir():
        return
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if not any(folder.glob("part-*.npz")):
            return
        raise ConfigError(f"{path} is missing beside saved parts: {fix}") from None
    except (OSError, ValueError) as error:
        raise ConfigError(f"{path} cannot be read ({error}): {fix}") from None
    if recorded == request:
        return
    if not isinstance(recorded, dict):
        raise ConfigError(f"{path} is not a request written by `actrec eval`: {fix}")
    differing = sorted(set(recorded) ^ set(request)) or sorted(
        key for key in request if recorded[key] != request[key]
    )
    key = differing[0]
    raise ConfigError(
        f"{path} records another evaluation ({key}: {_brief(recorded.get(key))}, not "
        f"{_brief(request.get(key))}): {fix}"
    )


def _first_difference(found: tuple, wanted: tuple) -> int:
    pairs = enumerate(zip(found, wanted, strict=False))  # the shorter's length at most
    return next((row for row, (one, other) in pairs if one != other), min(len(found), len(wanted)))


def _shown(values: tuple, other: tuple) -> str:
    """`values` from their first difference with `other`, SHOWN_MAX of them, elided."""
    start = _first_difference(values, other) if other else 0
    start = 0 if start < SHOWN_MAX else min(start, len(values) - 1)
    shown = ", ".join(str(value) for value in values[start : start + SHOWN_MAX])
    return f"{'..., ' if start else ''}{shown}{', ...' if start + SHOWN_MAX < len(values) else ''}"


def _brief(value) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."
