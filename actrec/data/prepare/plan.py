"""What a preparation will make: settings checked, the plan (whose digest identifies the
output), the output folder's state (new, interrupted, complete), and the dry run.

The partial folder's layout is described in actrec.data.prepare.dataset.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from actrec.data.format.flow import create_flow_estimator
from actrec.data.format.manifest import FORMAT_VERSION, MANIFEST_FILE, group_ignored, read_manifest
from actrec.data.format.video import FrameSize
from actrec.data.prepare.encode_video import PrepareSettings
from actrec.data.sources.base import SPLIT_NAMES, UNLABELLED, DatasetListing, VideoEntry
from actrec.errors import ConfigError, OutputError

PARTIAL_DIR = ".actrec-partial"
PLAN_FILE = "plan.json"
STATE_FILE = "state.jsonl"
NO_CLASS = "(unlabelled)"


@dataclass
class DryRunReport:
    """What `prepare` would do: videos per split and the ones it can tell are unusable;
    per class (in label order; NO_CLASS for unlabelled videos) its videos per split; the
    source's ignored paths as report.json groups them, and its warnings."""

    counts: dict[str, int]
    would_skip: list[dict] = field(default_factory=list)
    per_class: dict[str, dict[str, int]] = field(default_factory=dict)
    ignored: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def validate_settings(settings: PrepareSettings) -> None:
    """ConfigError for a setting that cannot work (checked before anything is written)."""
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


def entries_by_split(listing: DatasetListing) -> dict[str, list[VideoEntry]]:
    """{split: its entries sorted by video id}, for the splits that list any video."""
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
        for entries in entries_by_split(listing).values()
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


def output_status(out_dir: Path, plan: dict) -> str:
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
    """Counts per split and per class, the listed videos that are missing or empty (nothing
    is decoded), the source's ignored paths and warnings."""
    report = DryRunReport(
        counts=listing.counts_by_split(),
        per_class={name: {} for name in listing.classes},
        ignored=group_ignored([asdict(item) for item in listing.ignored]),
        warnings=list(listing.warnings),
    )
    for entry in listing.entries:
        name = listing.classes[entry.label] if entry.label != UNLABELLED else NO_CLASS
        counts = report.per_class.setdefault(name, {})
        counts[entry.split] = counts.get(entry.split, 0) + 1
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
