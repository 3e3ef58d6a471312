"""Finding an evaluation that is already on disk, so that fusing evaluated runs does not
run their models again.

An evaluation in RUN/eval/SPLIT-PROTOCOL is reused when its results.json records the same
split, protocol (name, segments, clips, crops), prepared data folder and weights file (path,
size and modification time) as the evaluation being asked for; anything else, including an
evaluation written before these were recorded, is evaluated again.
"""

from __future__ import annotations

import json
from pathlib import Path

from actrec.evaluation.protocols import Protocol
from actrec.evaluation.reports import RESULTS_FILE
from actrec.evaluation.scores import SCORES_FILE


def weights_stamp(weights_path: Path) -> dict:
    """What identifies a weights file cheaply: its resolved path, size and mtime (ns)."""
    status = weights_path.stat()
    return {
        "path": str(weights_path.resolve()),
        "bytes": status.st_size,
        "modified_ns": status.st_mtime_ns,
    }


def evaluation_request(
    run, protocol: Protocol, data_dir: Path, split: str, average: str = "logits"
) -> dict:
    """The fields of results.json that say which evaluation this is (`average`: what was
    averaged over each video's views, actrec.evaluation.scores)."""
    return {
        "split": split,
        "average": average,
        "protocol": protocol.name,
        "num_segments": protocol.num_segments or run.recipe.data.num_segments,
        "num_clips": protocol.num_clips,
        "num_crops": protocol.num_crops,
        "data": str(Path(data_dir).resolve()),
        "weights": weights_stamp(run.weights_path),
    }


def saved_evaluation_folder(folder: Path, request: dict) -> Path | None:
    """`folder` when it holds scores and a results.json matching `request`, else None."""
    try:
        results = json.loads((folder / RESULTS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(results, dict) or not (folder / SCORES_FILE).is_file():
        return None
    if any(results.get(key) != value for key, value in request.items()):
        return None
    return folder
