"""What `actrec prepare` prints: the dry-run listing (per split, per class, what the source
ignored, its warnings), the preparation summary, and the synthetic set it generates first
when it is missing."""

from __future__ import annotations

from pathlib import Path

from actrec_cli.console import console, progress_for
from rich.markup import escape
from rich.table import Table

from actrec.data.sources.base import SPLIT_NAMES

SHOWN_PATHS = 5  # per group of ignored paths in the dry run


def generate_synthetic_if_missing(root: Path) -> None:
    from actrec.data.synthetic.dataset import (  # OpenCV: only when preparing it
        check_synthetic_version,
        generate_synthetic_dataset,
        is_synthetic_dataset,
    )

    if is_synthetic_dataset(root):
        check_synthetic_version(root)
    else:
        console().print(f"generating the synthetic motion dataset in {root}")
        generate_synthetic_dataset(root, progress=progress_for("videos"))


def print_warnings(warnings) -> None:
    """The source's warnings (e.g. a class too small for a test video), one a line."""
    for warning in warnings:
        console().print(f"[yellow]warning:[/] {escape(warning)}", highlight=False, soft_wrap=True)


def print_class_counts(report) -> None:
    """A table of each class's listed videos per split."""
    splits = [split for split in SPLIT_NAMES if split in report.counts]
    table = Table(title="videos per class (dry run)")
    table.add_column("class")
    for column in (*splits, "total"):
        table.add_column(column, justify="right")
    for name, counts in report.per_class.items():
        cells = [str(counts.get(split, 0)) for split in splits]
        table.add_row(escape(name), *cells, str(sum(counts.values())))
    console().print(table)


def print_ignored(groups) -> None:
    """The source's ignored paths by reason and detail, with the first few paths of each."""
    if not groups:
        return
    total = sum(group["count"] for group in groups)
    console().print(f"ignored under the root ({total}, not videos of a class):")
    for group in groups:
        paths = ", ".join(group["paths"][:SHOWN_PATHS])
        more = group["count"] - SHOWN_PATHS
        paths += f", ... and {more} more" if more > 0 else ""
        console().print(
            escape(f"  {group['count']} {group['reason']}: {group['detail']}: {paths}"),
            highlight=False,
            soft_wrap=True,
        )


def print_dry_run(report, dataset: str) -> None:
    table = Table(title=f"{dataset}: videos per split (dry run)")
    table.add_column("split")
    table.add_column("listed", justify="right")
    table.add_column("would skip", justify="right")
    for split in (split for split in SPLIT_NAMES if split in report.counts):
        count = report.counts[split]
        skips = sum(1 for item in report.would_skip if item["split"] == split)
        table.add_row(split, str(count), str(skips))
    console().print(table)
    print_class_counts(report)
    print_ignored(report.ignored)
    print_warnings(report.warnings)
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
    report = summary.out_dir / "report.json"
    for counts, what in (
        (summary.skipped_by_reason, "skipped"),
        (summary.ignored_by_reason, "ignored under the root (not videos of a class)"),
    ):
        if counts:
            reasons = ", ".join(f"{count} {reason}" for reason, count in counts.items())
            console().print(
                f"{what}: {reasons}; every one is listed in {report}",
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
