"""Re-make the damaged shards of a complete prepared folder (a re-run of `actrec prepare`).

A shard is damaged when its file differs from the size and SHA-256 the manifest records
(actrec.data.format.integrity). Its videos are the ones the manifest lists in it; encoding is
deterministic (the same settings and tool versions give the same bytes), so re-preparing
exactly those videos, in manifest order, gives the shard back byte for byte. Every other
shard is left untouched.

Each re-encoded record is checked against the digest the manifest records before the new
file replaces the damaged one (atomically); when a video is gone or encodes differently
(another OpenCV, an edited file), nothing is replaced and the error says what differs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from actrec.data.format.integrity import ShardProblem, file_sha256, shard_problems
from actrec.data.format.manifest import MANIFEST_FILE
from actrec.data.prepare.encode_video import PrepareSettings, VideoTask
from actrec.data.prepare.executors.local import encode_in_order
from actrec.errors import DatasetError
from actrec.files.atomic import commit_temporary, temporary_path
from actrec.progress import NullProgress, Progress


@dataclass
class RepairSummary:
    """The shards re-made (names) and how many videos that re-prepared."""

    shards: list[str] = field(default_factory=list)
    videos: int = 0


def _shard_tasks(manifest: dict, shard_name: str) -> list[VideoTask]:
    """The videos recorded in `shard_name`, in the shard's order (their byte offsets)."""
    classes = manifest["classes"]
    rows = sorted(
        (
            video
            for video in manifest["videos"]
            if video["status"] == "ok" and video["shard"] == shard_name
        ),
        key=lambda video: video.get("offset", 0),
    )
    return [
        VideoTask(
            position,
            row["id"],
            row["path"],
            row["label"],
            classes[row["label"]] if row["label"] >= 0 else "",
            row["split"],
        )
        for position, row in enumerate(rows)
    ]


def _not_identical(out_dir: Path, problem: ShardProblem, task: VideoTask, what: str):
    return DatasetError(
        f"{out_dir / problem.name} {problem.describe()}, and it cannot be re-made as it was: "
        f"video {task.video_id} ({task.path}) {what}. The shard was left as it is; prepare "
        "the dataset again into a new --out folder"
    )


def _remake_shard(
    out_dir: Path,
    manifest: dict,
    problem: ShardProblem,
    settings: PrepareSettings,
    workers: int,
    progress: Progress,
) -> int:
    """Re-encode the shard's videos into a temporary file, check it, replace the damaged
    file; the number of videos re-prepared."""
    import tensorflow as tf

    tasks = _shard_tasks(manifest, problem.name)
    digests = {
        video["id"]: video["digest"]
        for video in manifest["videos"]
        if video["status"] == "ok" and video["shard"] == problem.name
    }
    path = out_dir / problem.name
    temporary = temporary_path(path)
    progress.start(f"re-making {problem.name}", len(tasks))
    try:
        with tf.io.TFRecordWriter(str(temporary)) as writer:
            for task, result in zip(tasks, encode_in_order(tasks, settings, workers), strict=True):
                if result.records is None:
                    raise _not_identical(out_dir, problem, task, f"is now skipped: {result.detail}")
                if result.digest != digests[task.video_id]:
                    raise _not_identical(
                        out_dir, problem, task, "encodes to other bytes than when it was prepared"
                    )
                for record in result.records:  # the header, then its frame records
                    writer.write(record)
                progress.advance(1, frames=result.num_frames)
        expected = manifest["shard_files"][problem.name]["sha256"]
        if file_sha256(temporary) != expected:
            raise DatasetError(
                f"{path}: the re-made shard does not have the SHA-256 {out_dir / MANIFEST_FILE} "
                "records; the shard was left as it is; prepare the dataset again into a new --out"
            )
        commit_temporary(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
        progress.finish()
    return len(tasks)


def repair_damaged_shards(
    out_dir: Path | str,
    manifest: dict,
    settings: PrepareSettings,
    workers: int = 1,
    progress: Progress | None = None,
) -> RepairSummary:
    """Verify every shard of the complete folder `out_dir` against `manifest` (sizes and
    SHA-256) and re-make the damaged ones from their videos; intact shards are not touched.
    DatasetError when a damaged shard cannot be re-made identically."""
    out_dir = Path(out_dir)
    progress = progress or NullProgress()
    summary = RepairSummary()
    for problem in shard_problems(out_dir, manifest, progress=progress):
        progress.message(f"{problem.name} {problem.describe()}: re-preparing its videos")
        summary.videos += _remake_shard(out_dir, manifest, problem, settings, workers, progress)
        summary.shards.append(problem.name)
    return summary
