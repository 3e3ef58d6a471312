"""Finishing a preparation: shards renamed to their -of-N names, checksummed, report.json
then manifest.json written, the partial folder removed; and the summary of a manifest.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from actrec import __version__
from actrec.data.format.integrity import SHARD_FILES_KEY, describe_shard_files
from actrec.data.format.manifest import (
    FORMAT_VERSION,
    MANIFEST_FILE,
    RECORD_LAYOUT,
    REPORT_FILE,
    build_report,
)
from actrec.data.format.shards import shard_file_name
from actrec.data.prepare.plan import PARTIAL_DIR, STATE_FILE
from actrec.data.sources.base import SPLIT_NAMES
from actrec.files.atomic import read_json_lines, write_text_atomic
from actrec.progress import Progress


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
    ignored_by_reason: dict[str, int] = field(default_factory=dict)  # not listed by the source


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


def json_text(value: dict) -> str:
    """`value` as indented JSON, non-ASCII names as they are ("Café-Tänze", readable in the
    file); escaped instead when a string is not valid UTF-8 (a file name's raw bytes)."""
    text = json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, indent=2) + "\n"
    return text


def finish_preparation(
    out_dir: Path,
    plan: dict,
    root: str,
    progress: Progress,
    ignored: list[dict] | None = None,
    warnings: list[str] | None = None,
) -> dict:
    """Rename shards, checksum them, write report.json (the skipped videos, and the
    source's `ignored` paths and `warnings`) then manifest.json, remove the partial
    folder."""
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
    report = build_report(plan["dataset"], skipped, ignored, warnings)
    write_text_atomic(out_dir / REPORT_FILE, json_text(report))
    write_text_atomic(out_dir / MANIFEST_FILE, json_text(manifest))
    shutil.rmtree(out_dir / PARTIAL_DIR, ignore_errors=True)
    return manifest


def summarize_manifest(out_dir: Path, manifest: dict) -> PrepareSummary:
    """The PrepareSummary of a finished preparation's manifest."""
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
