"""Sources -> decode -> flow -> shards: parallel, resumable, with a report of every skip.

Layout of an output folder while it is being prepared:

    OUT/.actrec-partial/plan.json     what is being prepared (dataset, settings, video list)
    OUT/.actrec-partial/state.jsonl   one line per closed shard: its videos and skips
    OUT/train-00000.tfrecord ...      closed shards (complete: written, fsynced, renamed)

A video's records (a header, then one record per frame: actrec.data.shards) are written
consecutively into one shard; its row in the manifest holds the header's byte offset.

Videos of each split are encoded in parallel but written in list order; a shard is closed
once it holds `shard_size_mb` of records. A killed run loses at most the open shard: a
re-run skips every video of the closed shards and produces byte-identical shards. At the end
the shards are renamed `train-00000-of-000NN.tfrecord`, report.json and then manifest.json
are written, and the partial folder is removed.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from actrec import __version__
from actrec.atomic import (
    TEMPORARY_SUFFIX,
    append_line_durably,
    read_json_lines,
    write_json_atomic,
)
from actrec.data.encode_video import PrepareSettings, VideoResult, VideoTask
from actrec.data.integrity import SHARD_FILES_KEY, describe_shard_files
from actrec.data.manifest import (
    FORMAT_VERSION,
    MANIFEST_FILE,
    RECORD_LAYOUT,
    REPORT_FILE,
    build_report,
    read_manifest,
)
from actrec.data.parallel import encode_in_order
from actrec.data.shard_writer import ShardWriter, video_row
from actrec.data.shards import shard_file_name
from actrec.data.sources.base import SPLIT_NAMES, DatasetListing, VideoEntry
from actrec.errors import ConfigError, DatasetError, OutputError
from actrec.progress import NullProgress, Progress

PARTIAL_DIR = ".actrec-partial"
PLAN_FILE = "plan.json"
STATE_FILE = "state.jsonl"


@dataclass
class PrepareSummary:
    """What a preparation produced (read back from the manifest)."""

    out_dir: Path
    prepared: dict[str, int]
    skipped: dict[str, int]
    skipped_by_reason: dict[str, int]
    num_shards: dict[str, int]
    frames_by_split: dict[str, int]
    resumed_videos: int = 0
    already_complete: bool = False
    elapsed_seconds: float = 0.0
    repaired_shards: list[str] = field(default_factory=list)  # re-made: they were damaged
    repaired_videos: int = 0


@dataclass
class DryRunReport:
    """What `prepare` would do: videos per split and the ones it can tell are unusable."""

    counts: dict[str, int]
    would_skip: list[dict] = field(default_factory=list)


# --- validation and plan -------------------------------------------------------------------


def validate_settings(settings: PrepareSettings) -> None:
    """ConfigError for a setting that cannot work (checked before anything is written)."""
    from actrec.data.flow import create_flow_estimator
    from actrec.data.video import FrameSize

    FrameSize.parse(settings.frame_size)
    if settings.flow != "none":
        create_flow_estimator(settings.flow)
    if not 1 <= settings.jpeg_quality <= 100:
        raise ConfigError(f"--jpeg-quality {settings.jpeg_quality}: use a value from 1 to 100")
    minimum = 2 if settings.flow != "none" else 1
    if settings.min_frames < minimum:
        raise ConfigError(
            f"--min-frames {settings.min_frames}: must be at least {minimum} "
            "(optical flow needs two frames)"
        )
    if settings.fps is not None and settings.fps <= 0:
        raise ConfigError(f"--fps {settings.fps}: must be positive (or omit it)")
    if settings.shard_size_mb <= 0:
        raise ConfigError(f"--shard-size-mb {settings.shard_size_mb}: must be positive")


def _entries_by_split(listing: DatasetListing) -> dict[str, list[VideoEntry]]:
    by_split = {split: listing.entries_in(split) for split in SPLIT_NAMES}
    return {
        split: sorted(entries, key=lambda e: e.video_id)
        for split, entries in by_split.items()
        if entries
    }


def build_plan(listing: DatasetListing, settings: PrepareSettings) -> dict:
    """Everything that determines the output; equal plans give byte-identical shards."""
    videos = [
        [entry.split, entry.video_id, entry.label, str(entry.path)]
        for entries in _entries_by_split(listing).values()
        for entry in entries
    ]
    plan = {
        "format_version": FORMAT_VERSION,
        "dataset": listing.dataset,
        "split": listing.split_name,
        "classes": list(listing.classes),
        "settings": settings.to_dict(),
        "num_videos": len(videos),
    }
    plan["plan_digest"] = plan_digest(plan, videos)
    return plan


def plan_digest(plan: dict, videos: list[list]) -> str:
    """sha256 of a plan's fields and its [split, video id, label, path] list."""
    identity = json.dumps({**plan, "videos": videos}, sort_keys=True).encode()
    return hashlib.sha256(identity).hexdigest()


def _plan_differences(old: dict, new: dict) -> str:
    differences = []
    for key in ("format_version", "dataset", "split", "num_videos"):
        if old.get(key) != new.get(key):
            differences.append(f"{key} {old.get(key)!r} -> {new.get(key)!r}")
    old_settings, new_settings = old.get("settings", {}), new.get("settings", {})
    for key in sorted(set(old_settings) | set(new_settings)):
        if old_settings.get(key) != new_settings.get(key):
            differences.append(f"{key} {old_settings.get(key)!r} -> {new_settings.get(key)!r}")
    if old.get("classes") != new.get("classes"):
        differences.append("the class list")
    return ", ".join(differences) or "the list of videos (paths or labels)"


def _open_output(out_dir: Path, plan: dict) -> str:
    """Check `out_dir` against `plan`: "complete", "resume" or "new". Writes nothing."""
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputError(
            f"output path {out_dir} is a file; pass a folder with --out (it is created if missing)"
        )
    if not out_dir.exists():
        return "new"
    if (out_dir / MANIFEST_FILE).exists():
        manifest = read_manifest(out_dir)
        if manifest.get("plan_digest") == plan["plan_digest"]:
            return "complete"
        raise OutputError(
            f"{out_dir} already holds a prepared dataset made differently "
            f"({_plan_differences(manifest, plan)}); choose another --out, or delete that "
            "folder to prepare it again"
        )
    plan_path = out_dir / PARTIAL_DIR / PLAN_FILE
    if plan_path.exists():
        old_plan = json.loads(plan_path.read_text(encoding="utf-8"))
        if old_plan.get("plan_digest") == plan["plan_digest"]:
            return "resume"
        raise OutputError(
            f"{out_dir} holds an interrupted preparation made differently "
            f"({_plan_differences(old_plan, plan)}); re-run it with its original options to "
            "finish it, or choose another --out"
        )
    if any(out_dir.iterdir()):
        raise OutputError(
            f"output folder {out_dir} is not empty and is not an actrec prepared dataset; "
            "choose an empty or new folder with --out"
        )
    return "new"


def dry_run(listing: DatasetListing) -> DryRunReport:
    """Counts per split and the listed videos that are missing or empty (nothing is decoded)."""
    report = DryRunReport(counts=listing.counts_by_split())
    for entry in listing.entries:
        reason = ""
        if not entry.path.exists():
            reason, detail = "missing", "file not found"
        elif entry.path.stat().st_size == 0:
            reason, detail = "empty-file", "the file is empty (0 bytes)"
        if reason:
            report.would_skip.append(
                {
                    "video_id": entry.video_id,
                    "split": entry.split,
                    "path": str(entry.path),
                    "reason": reason,
                    "detail": detail,
                }
            )
    return report


# --- shards ------------------------------------------------------------------------------


def _prepare_split(
    out_dir: Path,
    split: str,
    entries: list[VideoEntry],
    classes: tuple[str, ...],
    settings: PrepareSettings,
    workers: int,
    progress: Progress,
) -> None:
    """Encode the videos of `split` not yet in a closed shard, closing shards as they fill."""
    state_path = out_dir / PARTIAL_DIR / STATE_FILE
    rows = [row for row in read_json_lines(state_path) if row["split"] == split]
    if any(row["split_complete"] for row in rows):
        return
    next_position = max((row["last_position"] for row in rows), default=-1) + 1
    next_shard = sum(1 for row in rows if row["shard_index"] is not None)
    tasks = [
        VideoTask(
            position,
            entry.video_id,
            str(entry.path),
            entry.label,
            classes[entry.label] if entry.label >= 0 else "",
            split,
        )
        for position, entry in enumerate(entries)
        if position >= next_position
    ]
    target_bytes = settings.shard_size_mb * 1024 * 1024
    writer: ShardWriter | None = None
    results: list[VideoResult] = []
    offsets: list[int | None] = []  # of each result's header in the open shard
    split_closed = False

    def close(last_position: int, split_complete: bool) -> None:
        nonlocal writer, next_shard, results, offsets, split_closed
        shard_index = None
        if writer is not None and writer.num_records:
            writer.commit()
            shard_index = next_shard
            next_shard += 1
        elif writer is not None:
            writer.discard()
        shard_name = shard_file_name(split, shard_index) if shard_index is not None else None
        row = {
            "split": split,
            "shard_index": shard_index,
            "first_position": results[0].position if results else last_position + 1,
            "last_position": last_position,
            "split_complete": split_complete,
            "videos": [
                video_row(result, shard_name, offset)
                for result, offset in zip(results, offsets, strict=True)
            ],
        }
        append_line_durably(state_path, json.dumps(row))
        writer, results, offsets, split_closed = None, [], [], split_complete

    last_position = next_position - 1
    try:
        for result in encode_in_order(tasks, settings, workers):
            offset = None
            if result.records is not None:
                if writer is None:
                    writer = ShardWriter(out_dir, split, next_shard)
                offset = writer.write_video(result.records)
            results.append(result)
            offsets.append(offset)
            last_position = result.position
            progress.advance(1, frames=result.num_frames)
            if writer is not None and writer.bytes_written >= target_bytes:
                close(last_position, split_complete=last_position == len(entries) - 1)
        if not split_closed:
            close(len(entries) - 1, split_complete=True)
    except BaseException:
        if writer is not None:
            writer.discard()
        raise


# --- finishing ---------------------------------------------------------------------------


def _final_shard_names(out_dir: Path, rows: list[dict], split: str) -> dict[str, str]:
    """Rename the closed shards of `split` to their -of-N names; map old name -> final name."""
    indices = sorted(
        row["shard_index"]
        for row in rows
        if row["split"] == split and row["shard_index"] is not None
    )
    names = {}
    for index in indices:
        working = out_dir / shard_file_name(split, index)
        final = out_dir / shard_file_name(split, index, len(indices))
        if working.exists():
            os.replace(working, final)
        names[working.name] = final.name
    return names


def _tool_versions() -> dict[str, str]:
    import cv2
    import numpy
    import tensorflow as tf

    return {
        "actrec": __version__,
        "opencv": cv2.__version__,
        "numpy": numpy.__version__,
        "tensorflow": tf.__version__,
        "python": platform.python_version(),
    }


def _finish(out_dir: Path, plan: dict, root: str, progress: Progress) -> dict:
    """Rename shards, checksum them, write report.json then manifest.json, remove the
    partial folder."""
    rows = read_json_lines(out_dir / PARTIAL_DIR / STATE_FILE)
    splits_present = [split for split in SPLIT_NAMES if any(row["split"] == split for row in rows)]
    videos, skipped, splits = [], [], {}
    for split in splits_present:
        names = _final_shard_names(out_dir, rows, split)
        split_videos = []
        for row in sorted(
            (r for r in rows if r["split"] == split), key=lambda r: r["last_position"]
        ):
            for video in row["videos"]:
                if video["shard"] is not None:
                    video = {**video, "shard": names[video["shard"]]}
                split_videos.append(video)
        ok = [video for video in split_videos if video["status"] == "ok"]
        splits[split] = {
            "videos": len(ok),
            "skipped": len(split_videos) - len(ok),
            "frames": sum(video["frames"] for video in ok),
            "shards": sorted(names.values()),
        }
        videos += split_videos
        skipped += [
            {
                "video_id": v["id"],
                "split": split,
                "path": v["path"],
                "reason": v["reason"],
                "detail": v["detail"],
            }
            for v in split_videos
            if v["status"] == "skipped"
        ]
    manifest = {
        "format_version": FORMAT_VERSION,
        "record_layout": RECORD_LAYOUT,
        "dataset": plan["dataset"],
        "split": plan["split"],
        "root": root,
        "classes": plan["classes"],
        "settings": plan["settings"],
        "plan_digest": plan["plan_digest"],
        "tool_versions": _tool_versions(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "splits": splits,
        "videos": videos,
    }
    names = [name for split in splits.values() for name in split["shards"]]
    manifest[SHARD_FILES_KEY] = describe_shard_files(out_dir, names, progress)
    write_json_atomic(out_dir / REPORT_FILE, build_report(plan["dataset"], skipped))
    write_json_atomic(out_dir / MANIFEST_FILE, manifest)
    shutil.rmtree(out_dir / PARTIAL_DIR, ignore_errors=True)
    return manifest


def summarize_manifest(out_dir: Path, manifest: dict) -> PrepareSummary:
    skipped_by_reason: dict[str, int] = {}
    for video in manifest["videos"]:
        if video["status"] == "skipped":
            skipped_by_reason[video["reason"]] = skipped_by_reason.get(video["reason"], 0) + 1
    splits = manifest["splits"]
    return PrepareSummary(
        out_dir=out_dir,
        prepared={split: info["videos"] for split, info in splits.items()},
        skipped={split: info["skipped"] for split, info in splits.items()},
        skipped_by_reason=skipped_by_reason,
        num_shards={split: len(info["shards"]) for split, info in splits.items()},
        frames_by_split={split: info["frames"] for split, info in splits.items()},
    )


def _remove_stale_temporaries(out_dir: Path) -> None:
    """Delete temporary files left by a killed run (they never carry a final name)."""
    for path in out_dir.glob(f".*{TEMPORARY_SUFFIX}"):
        path.unlink(missing_ok=True)


def prepare_dataset(
    listing: DatasetListing,
    out_dir: Path | str,
    settings: PrepareSettings | None = None,
    workers: int | None = None,
    progress: Progress | None = None,
    root: Path | str | None = None,
) -> PrepareSummary:
    """Prepare every video of `listing` into shards in `out_dir` (resuming if interrupted).

    Raises ConfigError / OutputError before writing anything when settings or the output
    folder are unusable. An existing complete output with the same plan is verified (shard
    sizes and SHA-256) and only its damaged shards are re-made (actrec.data.repair).
    """
    progress = progress or NullProgress()
    settings = settings or PrepareSettings()
    out_dir = Path(out_dir)
    started = time.monotonic()
    validate_settings(settings)
    if not listing.entries:
        raise DatasetError(
            f"the {listing.dataset} annotations list no videos; check --root and --annotations"
        )
    workers = max(1, workers if workers is not None else (os.cpu_count() or 1))
    plan = build_plan(listing, settings)
    status = _open_output(out_dir, plan)
    if status == "complete":  # verify it, and re-make only the shards found damaged
        from actrec.data.repair import repair_damaged_shards

        manifest = read_manifest(out_dir)
        repaired = repair_damaged_shards(out_dir, manifest, settings, workers, progress)
        summary = summarize_manifest(out_dir, manifest)
        summary.already_complete = True
        summary.repaired_shards, summary.repaired_videos = repaired.shards, repaired.videos
        return summary
    partial = out_dir / PARTIAL_DIR
    partial.mkdir(parents=True, exist_ok=True)
    if status == "new":
        write_json_atomic(partial / PLAN_FILE, plan)
    _remove_stale_temporaries(out_dir)
    rows = read_json_lines(partial / STATE_FILE)
    resumed = sum(len(row["videos"]) for row in rows)
    if resumed:
        progress.message(f"resuming: {resumed} videos already prepared in {out_dir}")
    by_split = _entries_by_split(listing)
    remaining = sum(len(entries) for entries in by_split.values()) - resumed
    progress.start(f"preparing {listing.dataset}", remaining)
    try:
        for split, entries in by_split.items():
            _prepare_split(out_dir, split, entries, listing.classes, settings, workers, progress)
    finally:
        progress.finish()
    manifest = _finish(out_dir, plan, str(root if root is not None else ""), progress)
    summary = summarize_manifest(out_dir, manifest)
    summary.resumed_videos = resumed
    summary.elapsed_seconds = time.monotonic() - started
    return summary
