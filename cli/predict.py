"""`actrec predict`: the top-k actions of video files, with an exported model."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from actrec_cli.argument_checks import check_predict_arguments
from actrec_cli.console import console, error_console, import_tensorflow_quietly, progress_for
from actrec_cli.options import format_options
from actrec_cli.predict_stream import run_stream, written_with_parents
from actrec_cli.predict_timeline import run_timeline
from rich.table import Table
from rich.text import Text

from actrec.export.metadata import read_export_metadata
from actrec.files.output_paths import refuse_a_file_on_the_way
from actrec.predict.annotation_output import annotation_outputs, check_annotation_output
from actrec.predict.timeline import DEFAULT_WINDOW_SECONDS
from actrec.predict.video_files import predict_videos


def _table(prediction) -> Table:
    table = Table()
    table.add_column("#", justify="right")
    table.add_column("class")
    table.add_column("probability", justify="right")
    for rank, (name, probability) in enumerate(prediction.top_k, start=1):
        table.add_row(str(rank), name, f"{probability:.4f}")
    return table


def _check_csv(csv_path: Path | None) -> None:
    """--csv FILE refused before TensorFlow is imported when its folder is a path through a
    file (click refuses a folder); its missing folders are made when it is written."""
    if csv_path is None:
        return
    refuse_a_file_on_the_way(Path(csv_path).parent, "--csv")


def _check_annotation(annotate: Path | None, videos: tuple[str, ...], timeline: bool) -> None:
    """--annotate OUT refused before TensorFlow is imported when it cannot be written."""
    if annotate is None:
        return
    check_annotation_output(annotate, videos, timeline)
    for output in annotation_outputs(annotate, timeline):
        if not Path(output).is_file():  # an earlier output is replaced
            refuse_a_file_on_the_way(output, "--annotate")


def _write_annotated_clip(video: str, prediction, model_dir: Path, annotate: Path) -> None:
    # OpenCV at its top: only when --annotate writes a video
    from actrec.predict.annotated_video import (
        clip_annotated_frames,
        video_rate_and_length,
        write_video_atomic,
    )

    classes = read_export_metadata(model_dir)["classes"]
    fps, total = video_rate_and_length(video)
    frames = clip_annotated_frames(video, prediction.top_k, classes)
    written_with_parents(
        annotate,
        lambda: write_video_atomic(annotate, frames, fps, progress_for("frames"), total),
    )
    error_console().print(f"wrote {annotate}", markup=False)


def _quiet_opencv() -> None:
    """OpenCV's own warnings about an unreadable file; this command reports it itself."""
    import cv2

    cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_ERROR)


@click.command()
@click.argument(
    # Strings as given: a Path would fold a stream URL's "rtsp://" into "rtsp:/".
    "videos",
    metavar="VIDEO...",
    nargs=-1,
    required=True,
    type=str,
)
@click.option(
    "--model",
    "model_dir",
    type=click.Path(path_type=Path),
    required=True,
    help="An `actrec export` folder (SavedModel, TFLite or ONNX).",
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
@click.option(
    "--timeline",
    is_flag=True,
    help="Classify sliding windows of each VIDEO (long recordings): one row per window with "
    "its start and end in seconds. Frames are read as a stream: memory does not grow with "
    "the video's length.",
)
@click.option(
    "--window",
    type=float,
    default=DEFAULT_WINDOW_SECONDS,
    show_default=True,
    help="With --timeline: seconds per window (sampled and cropped as the `centre` "
    "evaluation samples a clip; about your training clips' length works best).",
)
@click.option(
    "--stride",
    type=float,
    default=None,
    help="With --timeline: seconds between window starts.  [default: half the window]",
)
@click.option(
    "--csv",
    "csv_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="With --timeline: also write the rows to this CSV file (video, start, end, "
    "class_1, probability_1, ...).",
)
@click.option(
    "--stream",
    is_flag=True,
    help="Run a streaming export (`actrec export RUN --streaming`, an online TSM) frame by "
    "frame on VIDEO: a file, a camera index (0) or a stream URL (whatever OpenCV opens), "
    "printing the running top-1 after each frame (--json: one JSON line per frame).",
)
@click.option(
    "--every",
    type=click.IntRange(min=1),
    default=None,
    help="With --stream: feed every n-th frame.  [default: the training videos' frames per "
    "segment, from the export]",
)
@click.option(
    "--smooth",
    type=click.IntRange(min=1),
    default=None,
    help="With --stream: frames whose logits the running prediction averages.  [default: "
    "the model's segments]",
)
@click.option(
    "--annotate",
    type=click.Path(path_type=Path),
    default=None,
    help="Also write VIDEO (one) with the top-k drawn on each frame to this file (.mp4, "
    ".m4v, .mov: 'mp4v'; .avi: MJPG), at the source's size and frame rate: the video's "
    "prediction, each window's with --timeline (which also writes OUT.timeline.png, the "
    "top-1 class over time), the running one with --stream (Ctrl+C ends a camera: the "
    "video so far is written).",
)
@click.option(
    "--trust-model",
    is_flag=True,
    help="Run the model even if it holds what an actrec export never does (an op that may "
    "act on your files, data outside its folder): only for a model whose author you trust. "
    "Without it, such a model is refused before it is loaded.",
)
@format_options("runtime_options")
def predict(
    videos,
    model_dir,
    top_k,
    as_json,
    timeline,
    window,
    stride,
    csv_path,
    stream,
    every,
    smooth,
    annotate,
    trust_model,
    **runtime_options,
):
    """Predict the action in each VIDEO: decoded, sampled and (for flow models) given optical
    flow the way the model's training data was prepared. A video that cannot be read is
    reported and skipped; the exit code is 1 if any was.

    With --timeline, predict each window of a long video instead (see --window, --stride).
    """
    if not timeline:
        for name, value in (("--csv", csv_path), ("--stride", stride)):
            if value is not None:
                raise click.UsageError(f"{name} needs --timeline")
    if not stream:
        for name, value in (("--every", every), ("--smooth", smooth)):
            if value is not None:
                raise click.UsageError(f"{name} needs --stream")
    elif timeline:
        raise click.UsageError("--stream and --timeline are two modes: choose one")
    elif len(videos) != 1:
        raise click.UsageError("--stream takes one source (a file, camera index or URL)")
    options = {name: value for name, value in runtime_options.items() if value is not None}
    check_predict_arguments(() if stream else videos, model_dir)  # before TensorFlow
    _check_annotation(annotate, videos, timeline)
    _check_csv(csv_path)
    import_tensorflow_quietly()
    _quiet_opencv()
    if stream:
        run_stream(
            videos[0], model_dir, top_k, as_json, every, smooth, options, trust_model, annotate
        )
        return
    if timeline:
        run_timeline(
            videos,
            model_dir,
            top_k,
            as_json,
            window,
            stride,
            csv_path,
            options,
            trust_model,
            annotate,
        )
        return

    predictions = predict_videos(
        videos,
        model_dir,
        top_k,
        progress=progress_for("videos"),
        trust_model=trust_model,
        **options,
    )
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
    if annotate is not None and predictions[0].ok:
        _write_annotated_clip(videos[0], predictions[0], model_dir, annotate)
    if failed:
        error_console().print(
            f"{len(failed)} of {len(predictions)} videos could not be read", markup=False
        )
        sys.exit(1)
