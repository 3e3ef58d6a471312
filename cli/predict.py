"""`actrec predict`: the top-k actions of video files, with an exported model."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from actrec_cli.console import console, error_console, import_tensorflow_quietly, progress_for
from rich.table import Table
from rich.text import Text


def _table(prediction) -> Table:
    table = Table()
    table.add_column("#", justify="right")
    table.add_column("class")
    table.add_column("probability", justify="right")
    for rank, (name, probability) in enumerate(prediction.top_k, start=1):
        table.add_row(str(rank), name, f"{probability:.4f}")
    return table


def _quiet_opencv() -> None:
    """OpenCV's own warnings about an unreadable file; this command reports it itself."""
    import cv2

    cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_ERROR)


@click.command()
@click.argument(
    "videos", metavar="VIDEO...", nargs=-1, required=True, type=click.Path(path_type=Path)
)
@click.option(
    "--model",
    "model_dir",
    type=click.Path(path_type=Path),
    required=True,
    help="An `actrec export` folder (SavedModel).",
)
@click.option(
    "--top-k", type=click.IntRange(min=1), default=5, show_default=True, help="Classes shown."
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON list of {video, top_k: [{class, probability}], error} on stdout.",
)
def predict(videos, model_dir, top_k, as_json):
    """Predict the action in each VIDEO: decoded, sampled and (for flow models) given optical
    flow the way the model's training data was prepared. A video that cannot be read is
    reported and skipped; the exit code is 1 if any was."""
    import_tensorflow_quietly()
    _quiet_opencv()
    from actrec.export.predict import predict_videos

    predictions = predict_videos(videos, model_dir, top_k, progress=progress_for("videos"))
    failed = [prediction for prediction in predictions if not prediction.ok]
    for prediction in failed:
        error_console().print(
            f"cannot read {prediction.video}: {prediction.error}", markup=False, soft_wrap=True
        )
    if as_json:
        click.echo(json.dumps([prediction.to_dict() for prediction in predictions], indent=2))
    else:
        for prediction in predictions:
            if prediction.ok:
                console().print(Text(prediction.video, style="bold"), soft_wrap=True)
                console().print(_table(prediction))
    if failed:
        error_console().print(
            f"{len(failed)} of {len(predictions)} videos could not be read", markup=False
        )
        sys.exit(1)
