"""Option groups of `actrec eval`: the test protocol and its overrides, and the two streams
of --fuse with their weights."""

from __future__ import annotations

from pathlib import Path

import click
from actrec_cli.options import option_group, parse_fusion_weights

from actrec.data.input.crop_layouts import CROP_LAYOUTS, crop_layouts_text
from actrec.evaluation.protocols import DEFAULT_PROTOCOL, PROTOCOLS

PROTOCOL_HELP = "; ".join(f"{name}: {protocol.description}" for name, protocol in PROTOCOLS.items())

protocol_options = option_group(
    click.option(
        "--protocol",
        "protocol_name",
        type=click.Choice(list(PROTOCOLS)),
        default=DEFAULT_PROTOCOL,
        show_default=True,
        help=f"Test protocol. {PROTOCOL_HELP}.",
    ),
    click.option(
        "--segments", type=click.IntRange(min=1), help="Override the protocol's segments."
    ),
    click.option("--clips", type=click.IntRange(min=1), help="Override the protocol's clips."),
    click.option(
        "--crops",
        type=click.Choice([str(count) for count in CROP_LAYOUTS]),
        help=f"Override the protocol's crops: {crop_layouts_text()}.",
    ),
)
"""--protocol and its --segments, --clips and --crops overrides."""

fusion_options = option_group(
    click.option(
        "--fuse",
        nargs=2,
        type=click.Path(path_type=Path),
        metavar="RGB FLOW",
        help="Evaluate two streams and their fusion: each a run directory, or the saved scores "
        "of an earlier evaluation (its folder or scores.npz).",
    ),
    click.option(
        "--weights",
        callback=parse_fusion_weights,
        metavar="W1,W2",
        help="Fusion weights in the order of --fuse [default: RGB 1, flow 1.5].",
    ),
)
"""--fuse RGB FLOW and --weights W1,W2."""
