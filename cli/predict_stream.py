"""`actrec predict SOURCE --stream`: a line (or a JSON line) per streamed frame; with
--annotate, the frames read with the running prediction drawn, written as a video."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import click
from actrec_cli.console import error_console

from actrec.files.output_paths import create_parents, remove_created_parents
from actrec.predict.stream import StreamingModel, streamed_frames


def written_with_parents(path: Path, write):
    """write()'s result, `path`'s missing folders made first (every check has passed by
    then) and removed again when write fails: each --annotate mode's writes."""
    created = create_parents(path)
    try:
        return write()
    except BaseException:
        remove_created_parents(created)
        raise


def _line(step) -> str:
    when = f"{step.time:8.2f} s" if step.time is not None else f"frame {step.frame:6d}"
    running = ", ".join(f"{name} {value:.3f}" for name, value in step.top_k)
    name, value = step.frame_top_k[0]
    return f"{when}  {running}   (this frame: {name} {value:.3f})"


def _echo(step, as_json: bool) -> None:
    click.echo(json.dumps(step.to_dict()) if as_json else _line(step))


def _no_frame(source: str) -> SystemExit:
    error_console().print(f"{source}: no frame could be read", markup=False)
    return SystemExit(1)


def _write_annotated(streamed, classes, annotate: Path, as_json: bool, source: str) -> None:
    """Prints each fed frame's line while every frame read is drawn and written; Ctrl+C
    ends the video (and the command, exit 130) once what came is written."""
    # OpenCV at their top: only when --annotate writes a video
    from actrec.predict.annotated_video import write_video_atomic
    from actrec.predict.annotation import annotated_frame

    first = next(streamed, None)  # the model loaded, the source open: every check passed
    if first is None:
        raise _no_frame(source)

    def frames():
        for item in itertools.chain([first], streamed):
            if item.fed:
                _echo(item.step, as_json)
            yield annotated_frame(item.image, item.step.top_k, classes, item.caption)

    count, interrupted = written_with_parents(
        annotate, lambda: write_video_atomic(annotate, frames(), first.rate, keep_on_interrupt=True)
    )
    error_console().print(f"wrote {annotate} ({count} frames)", markup=False)
    if interrupted:
        raise SystemExit(130)


def run_stream(
    source: str,
    model_dir,
    top_k: int,
    as_json: bool,
    every,
    smooth,
    options: dict,
    trust_model: bool = False,
    annotate: Path | None = None,
) -> None:
    model = StreamingModel(model_dir, trust_model, **options)
    streamed = streamed_frames(model, source, every, smooth, top_k)
    if annotate is not None:
        _write_annotated(streamed, model.classes, annotate, as_json, source)
        return
    steps = 0
    for item in streamed:
        if item.fed:
            steps += 1
            _echo(item.step, as_json)
    if steps == 0:
        raise _no_frame(source)
