"""`actrec prepare`: an official dataset to verified, sharded TFRecords."""

from __future__ import annotations

import os
from pathlib import Path

import click
from actrec_cli.console import console, import_tensorflow_quietly, progress_for
from rich.table import Table

from actrec.data.flow_methods import FLOW_METHODS, NO_FLOW

DATASETS = ("ucf101", "hmdb51", "kinetics", "folder", "synthetic")
SPLITTED = ("ucf101", "hmdb51")


def default_root(dataset: str) -> Path:
    return Path("datasets") / "raw" / dataset


def default_out(dataset: str, split: str | None) -> Path:
    if dataset in SPLITTED:
        return Path("datasets") / "prepared" / f"{dataset}-split{split or '1'}"
    return Path("datasets") / "prepared" / dataset


@click.command()
@click.argument("dataset", type=click.Choice(DATASETS))
@click.option(
    "--root",
    type=click.Path(path_type=Path),
    help="Folder holding the videos [default: datasets/raw/DATASET]. For synthetic, "
    "the set is generated there if it is not there yet.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    help="Output folder [default: datasets/prepared/DATASET[-splitN]].",
)
@click.option(
    "--annotations",
    type=click.Path(path_type=Path),
    help="Folder (or CSV) of the official split files [default: found under --root].",
)
@click.option("--split", help="Official split: 1, 2 or 3 for ucf101 / hmdb51 [default: 1].")
@click.option(
    "--flow",
    default="dis",
    show_default=True,
    type=click.Choice([*FLOW_METHODS, NO_FLOW]),
    help="Optical flow method: dis (DIS, fast preset), dis-medium (DIS, medium preset: "
    "about 2.7x lower end-point error at 1/5 the speed), farneback, tvl1 (needs "
    "opencv-contrib-python-headless); none stores RGB only. `actrec predict` computes the "
    "same flow.",
)
@click.option(
    "--size",
    "frame_size",
    help="Frame size: a short side (256), a fixed WIDTHxHEIGHT (340x256) or original "
    "[default: 256; original for synthetic].",
)
@click.option(
    "--fps",
    type=click.FloatRange(min=0, min_open=True),
    help="Resample videos to this frame rate [default: keep].",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Parallel worker processes [default: number of CPUs].",
)
@click.option("--jpeg-quality", type=click.IntRange(1, 100), default=90, show_default=True)
@click.option(
    "--min-frames",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Skip videos with fewer decoded frames.",
)
@click.option(
    "--shard-size-mb",
    type=click.FloatRange(min=0, min_open=True),
    default=150.0,
    show_default=True,
    help="Close a shard once it holds this many MB.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of the stratified split (folder).",
)
@click.option(
    "--val-fraction",
    type=click.FloatRange(0, 1, max_open=True),
    default=0.1,
    show_default=True,
    help="Validation share of the stratified split (folder).",
)
@click.option(
    "--test-fraction",
    type=click.FloatRange(0, 1, max_open=True),
    default=0.2,
    show_default=True,
    help="Test share of the stratified split (folder).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the videos per split and those that would be skipped; write nothing.",
)
def prepare(
    dataset,
    root,
    out_dir,
    annotations,
    split,
    flow,
    frame_size,
    fps,
    workers,
    jpeg_quality,
    min_frames,
    shard_size_mb,
    seed,
    val_fraction,
    test_fraction,
    dry_run,
):
    """Turn DATASET (ucf101, hmdb51, kinetics, folder, synthetic) into training shards.

    Parallel and resumable: re-run the same command after an interruption and it continues
    where it stopped. Every skipped video is listed in OUT/report.json.
    """
    from actrec.data.encode_video import PrepareSettings
    from actrec.data.prepare import dry_run as dry_run_listing
    from actrec.data.prepare import prepare_dataset, validate_settings
    from actrec.data.sources import SourceOptions, list_videos

    root = root or default_root(dataset)
    out_dir = out_dir or default_out(dataset, split)
    settings = PrepareSettings(
        frame_size=frame_size or ("original" if dataset == "synthetic" else "256"),
        fps=fps,
        flow=flow,
        jpeg_quality=jpeg_quality,
        min_frames=min_frames,
        shard_size_mb=shard_size_mb,
    )
    validate_settings(settings)
    import_tensorflow_quietly()
    if dataset == "synthetic" and not dry_run:
        _generate_synthetic_if_missing(root)
    options = SourceOptions(
        split=split,
        annotations=annotations,
        seed=seed,
        val_fraction=val_fraction,
        test_fraction=test_fraction,
    )
    listing = list_videos(dataset, root, options)
    if dry_run:
        _print_dry_run(dry_run_listing(listing), listing.dataset)
        return
    summary = prepare_dataset(
        listing,
        out_dir,
        settings,
        workers=workers or os.cpu_count() or 1,
        progress=progress_for("videos"),
        root=root.resolve(),
    )
    _print_summary(summary)


def _generate_synthetic_if_missing(root: Path) -> None:
    from actrec.data.synthetic import generate_synthetic_dataset, is_synthetic_dataset

    if not is_synthetic_dataset(root):
        console().print(f"generating the synthetic motion dataset in {root}")
        generate_synthetic_dataset(root, progress=progress_for("videos"))


def _print_dry_run(report, dataset: str) -> None:
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


def _print_summary(summary) -> None:
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
