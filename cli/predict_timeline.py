"""`actrec predict --timeline`: what it prints and writes (tables, JSON, CSV)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from actrec_cli.console import console, error_console, progress_for
from actrec_cli.predict_stream import written_with_parents
from rich.table import Table
from rich.text import Text

from actrec.export.metadata import read_export_metadata
from actrec.files.atomic import write_text_atomic
from actrec.predict.annotation_output import timeline_strip_path
from actrec.predict.timeline import timeline_csv, video_timelines


def _table(timeline) -> Table:
    table = Table()
    table.add_column("start s", justify="right")
    table.add_column("end s", justify="right")
    table.add_column("class")
    table.add_column("probability", justify="right")
    table.add_column("next", style="dim")
    for window in timeline.windows:
        (name, probability), rest = window.top_k[0], window.top_k[1:]
        table.add_row(
            f"{window.start:.2f}",
            f"{window.end:.2f}",
            name,
            f"{probability:.4f}",
            ", ".join(f"{other} {value:.2f}" for other, value in rest),
        )
    return table


def _write_annotated(timeline, model_dir: Path, annotate: Path) -> None:
    """The video with each window's top-k drawn, and its strip (OUT.timeline.png)."""
    # OpenCV at their top: only when --annotate writes a video
    from actrec.predict.annotated_video import (
        timeline_annotated_frames,
        video_rate_and_length,
        write_video_atomic,
    )
    from actrec.predict.timeline_strip import write_timeline_strip

    classes = read_export_metadata(model_dir)["classes"]
    fps, total = video_rate_and_length(timeline.video)
    strip = timeline_strip_path(annotate)

    def write() -> None:
        frames = timeline_annotated_frames(timeline.video, timeline, classes)
        write_video_atomic(annotate, frames, fps, progress_for("frames"), total)
        write_timeline_strip(strip, timeline, classes)

    written_with_parents(annotate, write)
    error_console().print(f"wrote {annotate} and {strip}", markup=False)


def run_timeline(
    videos,
    model_dir,
    top_k,
    as_json,
    window,
    stride,
    csv_path: Path | None,
    options: dict,
    trust_model: bool = False,
    annotate: Path | None = None,
):
    """Prints (and with --csv writes) the timelines of `videos`, and with --annotate writes
    the first's annotated video and strip; exit 1 if any failed."""
    timelines = video_timelines(
        videos,
        model_dir,
        window,
        stride,
        top_k,
        progress=progress_for("windows"),
        trust_model=trust_model,
        **options,
    )
    failed = [timeline for timeline in timelines if not timeline.ok]
    for timeline in timelines:
        if timeline.error:
            error_console().print(
                f"cannot read {timeline.video}: {timeline.error}", markup=False, soft_wrap=True
            )
        elif timeline.note:
            error_console().print(
                f"{timeline.video}: {timeline.note}", markup=False, soft_wrap=True
            )
    if csv_path is not None:
        text = timeline_csv(timelines, top_k)
        written_with_parents(Path(csv_path), lambda: write_text_atomic(csv_path, text))
        error_console().print(f"wrote {csv_path}", markup=False)
    if as_json:
        click.echo(json.dumps([timeline.to_dict() for timeline in timelines], indent=2))
    else:
        for timeline in timelines:
            if timeline.ok:
                console().print(
                    Text(
                        f"{timeline.video}  ({len(timeline.windows)} windows of "
                        f"{timeline.window_frames / timeline.fps:.2f} s every "
                        f"{timeline.stride_frames / timeline.fps:.2f} s)",
                        style="bold",
                    ),
                    soft_wrap=True,
                )
                console().print(_table(timeline))
    if annotate is not None and timelines[0].ok:
        _write_annotated(timelines[0], model_dir, annotate)
    if failed:
        error_console().print(
            f"{len(failed)} of {len(timelines)} videos could not be read", markup=False
        )
        sys.exit(1)
