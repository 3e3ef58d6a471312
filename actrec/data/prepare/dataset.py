"""Sources -> decode -> flow -> shards: parallel, resumable, with a report of every skip.

Layout of an output folder while it is being prepared:

    OUT/.actrec-partial/plan.json     what is being prepared (dataset, settings, video list)
    OUT/.actrec-partial/state.jsonl   one line per closed shard: its videos and skips
    OUT/train-00000.tfrecord ...      closed shards (complete: written, fsynced, renamed)

A video's records (a header, then one record per frame: actrec.data.format.shards) are written
consecutively into one shard; its row in the manifest holds the header's byte offset.

Videos of each split are encoded in parallel but written in list order; a shard is closed
once it holds `shard_size_mb` of records. A killed run loses at most the open shard: a
re-run skips every video of the closed shards and produces byte-identical shards. At the end
the shards are renamed `train-00000-of-000NN.tfrecord`, report.json and then manifest.json
are written, and the partial folder is removed.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict
from pathlib import Path

from actrec.data.format.manifest import count_by_reason, read_manifest
from actrec.data.prepare.encode_video import PrepareSettings
from actrec.data.prepare.executors.local import LocalPool
from actrec.data.prepare.executors.registry import Executor
from actrec.data.prepare.finish import PrepareSummary, finish_preparation, summarize_manifest
from actrec.data.prepare.plan import (
    PARTIAL_DIR,
    PLAN_FILE,
    STATE_FILE,
    build_plan,
    entries_by_split,
    output_status,
    validate_settings,
)
from actrec.data.prepare.repair import repair_damaged_shards
from actrec.data.prepare.split import prepare_split
from actrec.data.sources.base import DatasetListing, VideoEntry
from actrec.errors import DatasetError
from actrec.files.atomic import TEMPORARY_SUFFIX, read_json_lines, write_json_atomic
from actrec.progress import NullProgress, Progress

__all__ = ["prepare_dataset"]

NODE_CHECK_VIDEOS = 3
"""How many of the listed videos every encoding machine must read before the run starts."""


def _remove_stale_temporaries(out_dir: Path) -> None:
    """Delete temporary files left by a killed run (they never carry a final name)."""
    for path in out_dir.glob(f".*{TEMPORARY_SUFFIX}"):
        path.unlink(missing_ok=True)


def readable_samples(entries: tuple[VideoEntry, ...], count: int = NODE_CHECK_VIDEOS) -> list[str]:
    """Up to `count` listed videos this machine reads, spread over the list: a node that
    cannot read them does not see the dataset (some listed videos may be missing anywhere:
    Kinetics, docs/architecture.md §3)."""
    stretch = max(1, -(-len(entries) // count))
    found = []
    for start in range(0, len(entries), stretch):  # the first file found in each stretch:
        for entry in entries[start : start + stretch]:  # no stat of every video (NFS)
            if os.path.isfile(entry.path):
                found.append(str(entry.path))
                break
    return found


def prepare_dataset(
    listing: DatasetListing,
    out_dir: Path | str,
    settings: PrepareSettings | None = None,
    workers: int | None = None,
    progress: Progress | None = None,
    root: Path | str | None = None,
    executor: Executor | None = None,
) -> PrepareSummary:
    """Prepare every video of `listing` into shards in `out_dir` (resuming if interrupted).

    Raises ConfigError / OutputError before writing anything when settings or the output
    folder are unusable. An existing complete output with the same plan is verified (shard
    sizes and SHA-256) and only its damaged shards are re-made (actrec.data.prepare.repair),
    on this machine. `executor` encodes the videos (default: `workers` local processes); it
    checks first that its machines read the dataset (ClusterError, before anything is
    written).
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
    ignored = [asdict(item) for item in listing.ignored]
    plan = build_plan(listing, settings)
    status = output_status(out_dir, plan)
    if status == "complete":  # verify it, and re-make only the shards found damaged
        manifest = read_manifest(out_dir)
        repaired = repair_damaged_shards(out_dir, manifest, settings, workers, progress)
        summary = summarize_manifest(out_dir, manifest)
        summary.already_complete = True
        summary.repaired_shards, summary.repaired_videos = repaired.shards, repaired.videos
        summary.ignored_by_reason = count_by_reason(ignored)
        return summary
    executor = executor or LocalPool(workers)
    executor.check_nodes(readable_samples(listing.entries))
    partial = out_dir / PARTIAL_DIR
    partial.mkdir(parents=True, exist_ok=True)
    if status == "new":
        write_json_atomic(partial / PLAN_FILE, plan)
    _remove_stale_temporaries(out_dir)
    rows = read_json_lines(partial / STATE_FILE)
    resumed = sum(len(row["videos"]) for row in rows)
    if resumed:
        progress.message(f"resuming: {resumed} videos already prepared in {out_dir}")
    by_split = entries_by_split(listing)
    remaining = sum(len(entries) for entries in by_split.values()) - resumed
    progress.start(f"preparing {listing.dataset}", remaining)
    try:
        for split, entries in by_split.items():
            prepare_split(out_dir, split, entries, listing.classes, settings, executor, progress)
    finally:
        progress.finish()
    manifest = finish_preparation(
        out_dir,
        plan,
        str(root if root is not None else ""),
        progress,
        ignored=ignored,
        warnings=list(listing.warnings),
    )
    summary = summarize_manifest(out_dir, manifest)
    summary.ignored_by_reason = count_by_reason(ignored)
    summary.resumed_videos = resumed
    summary.elapsed_seconds = time.monotonic() - started
    return summary
