"""Option parsers shared by several commands."""

from __future__ import annotations

import math

import click

from actrec.errors import ConfigError
from actrec.export.formats.registry import all_options
from actrec.models.score_fusion import AVERAGES, DEFAULT_AVERAGE
from actrec.runs.trained import CHECKPOINT_CHOICES
from actrec.train.memory.units import parse_batch_size, parse_memory_size

checkpoint_option = click.option(
    "--checkpoint",
    type=click.Choice(CHECKPOINT_CHOICES),
    default="final",
    show_default=True,
    help="Which trained weights: final (final.weights.h5, the last epoch, as the published "
    "protocols report) or best (best.weights.h5, the epoch with the best validation top-1; "
    "never chosen on the test split).",
)
"""`--checkpoint final|best` of `actrec eval` and `actrec export`."""


def parse_fusion_weights(context, parameter, value: str | None):
    """click callback: "1,1.5" -> (1.0, 1.5); None stays None (the command's default).

    Each weight must be a finite number >= 0, and at least one must be > 0."""
    if value is None:
        return None
    try:
        weights = tuple(float(part) for part in value.split(","))
    except ValueError:
        raise click.BadParameter(
            f"{value!r}: give comma-separated numbers, one per stream, e.g. 1,1.5"
        ) from None
    if not all(math.isfinite(weight) and weight >= 0 for weight in weights) or not any(weights):
        raise click.BadParameter(
            f"{value!r}: each weight must be a number >= 0 and at least one > 0, e.g. 1,1.5"
        )
    return weights


def _library_parsed(parse, value):
    """`parse(value)` with the library's ConfigError turned into click's usage error."""
    if value is None:
        return None
    try:
        return parse(value)
    except ConfigError as error:
        raise click.BadParameter(str(error)) from None


def parse_batch_size_option(context, parameter, value: str | None):
    """click callback of `--batch-size N|auto`: a whole number >= 1 or "auto"."""
    return _library_parsed(parse_batch_size, value)


def parse_memory_size_option(context, parameter, value: str | None):
    """click callback of `--memory-budget SIZE`: bytes (e.g. 6GiB)."""
    return _library_parsed(parse_memory_size, value)


def score_average_option(what: str):
    """The --average option: what `what` averages, logits (default) or softmax."""
    return click.option(
        "--average",
        type=click.Choice(AVERAGES),
        default=DEFAULT_AVERAGE,
        show_default=True,
        help=f"What {what} averages: logits (the official TSN / TSM evaluation) or softmax "
        "probabilities.",
    )


def option_group(*options):
    """One decorator applying `options` in the order given (the first is listed first)."""

    def decorate(command):
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def format_options(kind: str):
    """A decorator adding a click option for each option of the registered export formats
    (kind "options": `actrec export --opset ...`; "runtime_options": `actrec predict
    --provider ...`): a new format's options need no change here. Each defaults to None (the
    format's own default applies); a format that does not take one refuses it."""
    where, after = ("--format ", "") if kind == "options" else ("a --format ", " export")

    def decorate(command):
        named = {}
        for format_name, option in all_options(kind):
            named.setdefault(option.name, (format_name, option))
        for format_name, option in reversed(list(named.values())):
            value_type = click.Choice(option.choices) if option.choices else option.kind
            default = "" if option.default is None else f"  [default: {option.default}]"
            command = click.option(
                f"--{option.name}",
                type=value_type,
                default=None,
                help=f"With {where}{format_name}{after}: {option.help}.{default}",
            )(command)
        return command

    return decorate
