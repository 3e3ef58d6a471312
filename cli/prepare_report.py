"""What `actrec prepare` prints: the dry-run listing, the preparation summary, and the
synthetic set it generates first when it is missing."""

from __future__ import annotations

from pathlib import Path

from actrec_cli.console import console, progress_for
from rich.table import Table


def generate_synthetic_if_missing(root: Path) -> None:
    from actrec.data.synthetic.dataset import (
        check_synthetic_version,
        generate_synthetic_dataset,
        is_synthetic_dataset,
    )

    if is_synthetic_dataset(root):
        check_synthetic_version(root)
    else:
        console().print(f"generating the synthetic motion dataset in {root}")
        generate_synthetic_dataset(root, progress=progress_for("videos"))


def print_dry_run(report, dataset: str) -> None:
    table = Table(title=f"{dataset}: videos per split (dry run)")
    table.add_column("split")
    table.add_column("listed", justify="right")
    table.add_column("would skip", justify="right")
    for split, count in report.counts.items():
        skips = sum(1 for item in report.would_skip if item["split"] == split)
        table.add_row(split, str(count), str(skips))
    console().print(table)
    for item in report.would_skip[:50]:
        console().print(
            f"  skip {item['video_id']} ({item['reason']}): {item['path']}",
            highlight=False,
            soft_wrap=True,
        )
    if len(report.would_skip) > 50:
        console().print(f"  ... and {len(report.would_skip) - 50} more")
    console().print(
        "Dry run: nothing was written. Undecodable and too-short videos are found "
        "only when decoding."
    )


def print_summary(summary) -> None:
    if summary.repaired_shards:
        console().print(
            f"repaired {summary.out_dir}: re-made {len(summary.repaired_shards)} damaged "
            f"shard(s) ({', '.join(summary.repaired_shards)}) from their "
            f"{summary.repaired_videos} videos; every other shard matches the manifest",
            soft_wrap=True,
            highlight=False,
        )
    elif summary.already_complete:
        console().print(
            f"{summary.out_dir} is already prepared with these settings and every shard "
            "matches its checksum; nothing to do.",
            soft_wrap=True,
        )
    table = Table(title=f"prepared {summary.out_dir}")
    for column in ("split", "videos", "skipped", "shards", "frames"):
        table.add_column(column, justify="left" if column == "split" else "right")
    for split in summary.prepared:
        table.add_row(
            split,
            str(summary.prepared[split]),
            str(summary.skipped[split]),
            str(summary.num_shards[split]),
            str(summary.frames_by_split[split]),
        )
    console().print(table)
    if summary.skipped_by_reason:
        reasons = ", ".join(
            f"{count} {reason}" for reason, count in summary.skipped_by_reason.items()
        )
        console().print(
            f"skipped: {reasons}; every skipped video is listed in "
            f"{summary.out_dir / 'report.json'}",
            highlight=False,
            soft_wrap=True,
        )
    if summary.resumed_videos:
        console().print(f"resumed: {summary.resumed_videos} videos were already prepared")
    if summary.elapsed_seconds and not summary.already_complete:
        done = (
            sum(summary.prepared.values()) + sum(summary.skipped.values()) - summary.resumed_videos
        )
        console().print(
            f"{done} videos in {summary.elapsed_seconds:.1f} s "
            f"({done / summary.elapsed_seconds:.1f} videos/s)"
        )
