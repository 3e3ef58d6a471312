"""`actrec synthetic`: generate the built-in synthetic motion dataset."""

from __future__ import annotations

from pathlib import Path

import click
from actrec_cli.console import console, progress_for

from actrec.data.synthetic.config import SyntheticConfig
from actrec.errors import ConfigError


@click.command()
@click.argument("root", type=click.Path(path_type=Path), default=Path("datasets/raw/synthetic"))
@click.option("--videos-per-class", type=click.IntRange(min=2), default=24, show_default=True)
@click.option("--frames", "num_frames", type=click.IntRange(min=2), default=24, show_default=True)
@click.option("--size", default="128x96", show_default=True, help="WIDTHxHEIGHT of the videos.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
def synthetic(root, videos_per_class, num_frames, size, seed):
    """Generate the synthetic motion dataset (UCF101 layout) in ROOT.

    Eight classes that differ only in motion (move left/right/up/down, rotate either way,
    zoom in/out): a single frame cannot tell them apart, optical flow can.
    """
    # OpenCV at its top: not for `actrec --help` and the other commands
    from actrec.data.synthetic.dataset import generate_synthetic_dataset

    try:
        width, height = (int(value) for value in size.lower().split("x"))
    except ValueError:
        raise ConfigError(f"--size {size!r}: use WIDTHxHEIGHT, e.g. 128x96") from None
    config = SyntheticConfig(
        videos_per_class=videos_per_class,
        num_frames=num_frames,
        width=width,
        height=height,
        seed=seed,
    )
    generate_synthetic_dataset(root, config, progress=progress_for("videos"))
    console().print(
        f"synthetic dataset in {root}; prepare it with `actrec prepare synthetic --root {root}`",
        soft_wrap=True,
    )
