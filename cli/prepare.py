"""`actrec prepare`: an official dataset to verified, sharded TFRecords."""

from __future__ import annotations

import os
from pathlib import Path

import click
from actrec_cli.argument_checks import check_prepare_arguments
from actrec_cli.console import import_tensorflow_quietly, progress_for
from actrec_cli.prepare_options import (
    default_out,
    default_root,
    encoding_options,
    executor_options,
    folder_split_options,
)
from actrec_cli.prepare_report import (
    generate_synthetic_if_missing,
    print_dry_run,
    print_summary,
    print_warnings,
)

from actrec.data.prepare.executors.registry import checked_options, open_executor
from actrec.data.sources import SOURCES, list_videos
from actrec.data.sources.base import SourceOptions

NAME_WIDTH = max(len(name) for name in SOURCES)
DATASETS_HELP = "\b\n" + "\n".join(
    f"  {source.name:{NAME_WIDTH}} {source.description}" for source in SOURCES.values()
)


@click.command(
    help="Turn DATASET into training shards.\n\n"
    "Parallel and resumable: re-run the same command after an interruption and it continues "
    "where it stopped. Every skipped video is listed in OUT/report.json.\n\n"
    f"DATASET is one of:\n\n{DATASETS_HELP}"
)
@click.argument("dataset", type=click.Choice(list(SOURCES)))
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
@click.option(
    "--split",
    help="Official split: 1, 2 or 3 for ucf101 / hmdb51 [default: 1]. "
    "something-something-v2 and jester have one: train / validation / test (unlabelled).",
)
@encoding_options
@executor_options
@folder_split_options
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
    executor,
    seed,
    val_fraction,
    test_fraction,
    dry_run,
    **executor_settings,
):
    """Prepare DATASET (a name of actrec.data.sources.SOURCES); the help is above."""
    # OpenCV at their top: not for `actrec --help` and the other commands
    from actrec.data.prepare.dataset import prepare_dataset
    from actrec.data.prepare.encode_video import PrepareSettings
    from actrec.data.prepare.plan import dry_run as dry_run_listing
    from actrec.data.prepare.plan import validate_settings

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
    executor_settings = checked_options(executor, executor_settings)
    check_prepare_arguments(dataset, root, out_dir, dry_run)  # before TensorFlow: at once
    if dataset == "synthetic" and not dry_run:
        generate_synthetic_if_missing(root)
    options = SourceOptions(
        split=split,
        annotations=annotations,
        seed=seed,
        val_fraction=val_fraction,
        test_fraction=test_fraction,
    )
    listing = list_videos(dataset, root, options)  # no videos (an empty root): before TensorFlow
    if dry_run:
        print_dry_run(dry_run_listing(listing), listing.dataset)
        return
    import_tensorflow_quietly()
    print_warnings(listing.warnings)
    workers = workers or os.cpu_count() or 1
    with open_executor(executor, workers, executor_settings) as pool:
        summary = prepare_dataset(
            listing,
            out_dir,
            settings,
            workers=workers,
            progress=progress_for("videos"),
            root=root.resolve(),
            executor=pool,
        )
    print_summary(summary)
