"""Option parsers shared by several commands."""

from __future__ import annotations

import click


def parse_fusion_weights(context, parameter, value: str | None):
    """click callback: "1,1.5" -> (1.0, 1.5); None stays None (the command's default)."""
    if value is None:
        return None
    try:
        return tuple(float(part) for part in value.split(","))
    except ValueError:
        raise click.BadParameter(
            f"{value!r}: give comma-separated numbers, one per stream, e.g. 1,1.5"
        ) from None


def score_average_option(what: str):
    """The --average option: what `what` averages, logits (default) or softmax."""
    return click.option(
        "--average",
        type=click.Choice(["logits", "softmax"]),
        default="logits",
        show_default=True,
        help=f"What {what} averages: logits (the official TSN / TSM evaluation) or softmax "
        "probabilities.",
    )
