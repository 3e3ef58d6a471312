"""The datasets and option defaults of `actrec prepare`, and its option groups: how videos
are encoded (by how many processes, on this machine or a Ray cluster), and the stratified
split of a folder."""

from __future__ import annotations

from pathlib import Path

import click
from actrec_cli.options import option_group

from actrec.data.format.flow_methods import FLOW_METHOD_DESCRIPTIONS, FLOW_METHODS, NO_FLOW
from actrec.data.prepare.executors.registry import (
    DEFAULT_EXECUTOR,
    executor_kind,
    executor_names,
)
from actrec.data.prepare.executors.registry import all_options as all_executor_options
from actrec.data.sources import SOURCES


def default_root(dataset: str) -> Path:
    """The --root default: datasets/raw/DATASET."""
    return Path("datasets") / "raw" / dataset


def default_out(dataset: str, split: str | None) -> Path:
    """The --out default: datasets/prepared/DATASET, -splitN for ucf101 and hmdb51."""
    if SOURCES[dataset].numbered_splits:
        return Path("datasets") / "prepared" / f"{dataset}-split{split or '1'}"
    return Path("datasets") / "prepared" / dataset


encoding_options = option_group(
    click.option(
        "--flow",
        default="dis",
        show_default=True,
        type=click.Choice([*FLOW_METHODS, NO_FLOW]),
        help="Optical flow method: "
        + "; ".join(f"{name}: {text}" for name, text in FLOW_METHOD_DESCRIPTIONS.items())
        + f"; {NO_FLOW} stores RGB only. `actrec predict` computes the same flow.",
    ),
    click.option(
        "--size",
        "frame_size",
        help="Frame size: a short side (256), a fixed WIDTHxHEIGHT (340x256) or original "
        "[default: 256; original for synthetic].",
    ),
    click.option(
        "--fps",
        type=click.FloatRange(min=0, min_open=True),
        help="Resample videos to this frame rate [default: keep].",
    ),
    click.option(
        "--workers",
        type=click.IntRange(min=1),
        default=None,
        help="Parallel worker processes [default: number of CPUs].",
    ),
    click.option("--jpeg-quality", type=click.IntRange(1, 100), default=90, show_default=True),
    click.option(
        "--min-frames",
        type=click.IntRange(min=1),
        default=8,
        show_default=True,
        help="Skip videos with fewer decoded frames.",
    ),
    click.option(
        "--shard-size-mb",
        type=click.FloatRange(min=0, min_open=True),
        default=150.0,
        show_default=True,
        help="Close a shard once it holds this many MB.",
    ),
)
"""--flow, --size, --fps, --workers, --jpeg-quality, --min-frames and --shard-size-mb."""

executor_options = option_group(
    click.option(
        "--executor",
        type=click.Choice(executor_names()),
        default=DEFAULT_EXECUTOR,
        show_default=True,
        help="Where videos are encoded: "
        + "; ".join(f"{name}: {executor_kind(name).summary}" for name in executor_names())
        + ". The output is the same bytes.",
    ),
    *(
        click.option(f"--{option.name}", help=f"With --executor {name}: {option.help}.")
        for name, option in all_executor_options()
    ),
)
"""--executor and each executor's options (the registry's: actrec.data.prepare.executors)."""

folder_split_options = option_group(
    click.option(
        "--seed",
        type=click.IntRange(min=0),
        default=0,
        show_default=True,
        help="Seed of the stratified split (folder).",
    ),
    click.option(
        "--val-fraction",
        type=click.FloatRange(0, 1, max_open=True),
        default=0.1,
        show_default=True,
        help="Validation share of the stratified split (folder).",
    ),
    click.option(
        "--test-fraction",
        type=click.FloatRange(0, 1, max_open=True),
        default=0.2,
        show_default=True,
        help="Test share of the stratified split (folder).",
    ),
)
"""--seed, --val-fraction and --test-fraction of the stratified split of a folder."""
