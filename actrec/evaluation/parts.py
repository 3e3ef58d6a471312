"""An evaluation cut into parts: how several workers share it, and how a killed one resumes.

The split's N videos are cut into parts of consecutive videos (`part_size`: a function of N
alone, so the parts are the same on any number of workers), and part p is scored by worker
p % W of W. A worker saves each part as soon as its videos are scored (a scores file,
actrec.evaluation.scores, written atomically) as

    OUT/.actrec-parts/DIGEST/part-00003-of-00032.npz

DIGEST being that of the evaluation request (weights, data, split, protocol, view average)
and the part size, so that the parts of another evaluation are never mixed in. A worker
started again skips the parts already saved, whatever the number of workers that saved
them; the chief (worker 0) waits for every part, concatenates them in part order (the
split's order: the rows one worker writes), writes the evaluation and removes the folder.
A part is merged, or skipped on resume, only if it is the part asked for
(actrec.evaluation.part_checks: the split's videos and labels of that part, the run's
classes, finite scores, the folder's request.json this evaluation's); any other is
refused, named with the fix, before anything is written.

Per-worker files, not a collective (docs/cluster.md, "Evaluation on several workers"):
evaluation syncs no gradients, so its workers need no tf.distribute strategy, coordination
service or ports: each runs the model alone, and the output folder, which every worker must
see already, is all they share. The saved parts make a killed evaluation resume for free,
and a worker that is lost is named by the parts it did not write, where a collective would
hang or fail every worker.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from actrec.errors import WorkerLostError
from actrec.evaluation.part_checks import SplitRows, check_request, read_part
from actrec.evaluation.scores import VideoScores, concatenate_video_scores, save_video_scores
from actrec.files.atomic import write_json_atomic
from actrec.progress import NullProgress, Progress

PARTS_DIR = ".actrec-parts"
REQUEST_FILE = "request.json"
PARTS_PER_SPLIT = 32  # a small split is cut into about this many parts
PART_VIDEOS_MAX = 64  # ... a large one into parts of this many videos
DEFAULT_WAIT_SECONDS = 600.0
POLL_SECONDS = 0.5
_PART_NAME = re.compile(r"part-(\d{5})-of-(\d{5})\.npz")


def part_size(num_videos: int) -> int:
    """Videos per part: about PARTS_PER_SPLIT parts, of PART_VIDEOS_MAX videos at most."""
    return max(1, min(PART_VIDEOS_MAX, math.ceil(num_videos / PARTS_PER_SPLIT)))


@dataclass(frozen=True)
class EvaluationParts:
    """The parts of one evaluation of `num_videos` videos, saved in `folder`; `request`:
    what they are an evaluation of (saved beside them as request.json), `expected`: what
    each part must hold (None: its row count and shapes only)."""

    folder: Path
    num_videos: int
    size: int
    request: dict = field(default_factory=dict, compare=False)
    expected: SplitRows | None = field(default=None, compare=False)

    @property
    def num_parts(self) -> int:
        return math.ceil(self.num_videos / self.size)

    def rows(self, part: int) -> range:
        """The places in the split of part `part`'s videos."""
        return range(part * self.size, min((part + 1) * self.size, self.num_videos))

    def share(self, worker: int, num_workers: int) -> list[int]:
        """The parts worker `worker` of `num_workers` scores: worker, worker + W, ..."""
        return list(range(worker, self.num_parts, num_workers))

    def path(self, part: int) -> Path:
        return self.folder / f"part-{part:05d}-of-{self.num_parts:05d}.npz"

    def saved(self) -> set[int]:
        """The parts already saved (by any worker, in this attempt or an earlier one)."""
        if not self.folder.is_dir():
            return set()
        found = (_PART_NAME.fullmatch(path.name) for path in self.folder.iterdir())
        return {
            int(match[1])
            for match in found
            if match and int(match[2]) == self.num_parts and int(match[1]) < self.num_parts
        }

    def missing(self) -> list[int]:
        saved = self.saved()
        return [part for part in range(self.num_parts) if part not in saved]

    def save(self, part: int, scores: VideoScores) -> None:
        """Save part `part`'s scores atomically (and, first, the request beside them)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        if not (self.folder / REQUEST_FILE).is_file():
            write_json_atomic(self.folder / REQUEST_FILE, self.request)
        save_video_scores(scores, self.path(part))

    def check_request(self, num_workers: int = 1) -> None:
        """ConfigError unless the folder's request.json is this evaluation's request (or
        no part is saved yet)."""
        every = " on every worker" if num_workers > 1 else ""
        fix = f"delete {self.folder} and run the same command again{every}"
        check_request(self.folder, REQUEST_FILE, self.request, fix)

    def load(self, part: int, num_workers: int = 1) -> VideoScores:
        """Part `part`'s saved scores; ConfigError naming the file, what it holds and the
        fix unless it is that part of this evaluation (actrec.evaluation.part_checks)."""
        if num_workers > 1:
            fix = (
                f"delete it and run the same command again (worker {part % num_workers} of "
                f"{num_workers} scores part {part} again; the other saved parts are kept)"
            )
        else:
            fix = "delete it and run the same command again: only its videos are scored again"
        return read_part(self.path(part), part, self.rows(part), self.expected, fix)

    def merged(self, num_workers: int = 1) -> VideoScores:
        """Every part's scores, in the split's order, each checked (`load`) and request.json
        too (`check_request`); ConfigError naming the first that is not this evaluation's."""
        self.check_request(num_workers)
        pieces = [self.load(part, num_workers) for part in range(self.num_parts)]
        return concatenate_video_scores(pieces)

    def remove(self) -> None:
        """Delete the saved parts (the evaluation is written), and PARTS_DIR when empty."""
        shutil.rmtree(self.folder, ignore_errors=True)
        with contextlib.suppress(OSError):  # other evaluations' parts are still there
            self.folder.parent.rmdir()


def evaluation_parts(
    out_dir: Path, request: dict, num_videos: int, expected: SplitRows | None = None
) -> EvaluationParts:
    """The parts of the evaluation `request` (actrec.evaluation.reuse.evaluation_request)
    of `num_videos` videos whose results go to out_dir; `expected`: what they hold."""
    size = part_size(num_videos)
    content = {**request, "num_videos": num_videos, "part_size": size}
    digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode("utf-8")).hexdigest()
    folder = Path(out_dir) / PARTS_DIR / digest[:16]
    return EvaluationParts(folder, num_videos, size, request, expected)


def _missing_text(parts: EvaluationParts, missing: list[int], num_workers: int) -> str:
    by_worker: dict[int, list[int]] = {}
    for part in missing:
        by_worker.setdefault(part % num_workers, []).append(part)
    return "; ".join(
        f"worker {worker} of {num_workers} (parts {', '.join(map(str, owned[:8]))}"
        f"{', ...' if len(owned) > 8 else ''} of {parts.num_parts})"
        for worker, owned in sorted(by_worker.items())
    )


def wait_for_parts(
    parts: EvaluationParts,
    num_workers: int,
    timeout_seconds: float = DEFAULT_WAIT_SECONDS,
    progress: Progress | None = None,
    *,
    poll_seconds: float = POLL_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Return when every part is saved. A WorkerLostError naming the workers whose parts
    are missing when no new part appeared for timeout_seconds (a worker that died, or was
    never started), instead of waiting forever."""
    progress = progress or NullProgress()
    missing = parts.missing()
    if missing:
        progress.message(f"waiting for {_missing_text(parts, missing, num_workers)}")
    last_change, last_count = clock(), len(missing)
    while missing:
        if len(missing) < last_count:
            last_change, last_count = clock(), len(missing)
        elif clock() - last_change > timeout_seconds:
            raise WorkerLostError(
                f"no part of this evaluation was saved for {timeout_seconds:g} s; missing: "
                f"{_missing_text(parts, missing, num_workers)}, under {parts.folder}. Is every "
                "worker running the same command? Run it again on every worker: the saved "
                "parts are kept, on any number of workers (--wait-timeout sets this wait)"
            )
        time.sleep(poll_seconds)
        missing = parts.missing()
