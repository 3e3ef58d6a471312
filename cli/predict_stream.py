"""`actrec predict SOURCE --stream`: a line (or a JSON line) per streamed frame."""

from __future__ import annotations

import json

import click
from actrec_cli.console import error_console


def _line(step) -> str:
    when = f"{step.time:8.2f} s" if step.time is not None else f"frame {step.frame:6d}"
    running = ", ".join(f"{name} {value:.3f}" for name, value in step.top_k)
    name, value = step.frame_top_k[0]
    return f"{when}  {running}   (this frame: {name} {value:.3f})"


def run_stream(
    source: str,
    model_dir,
    top_k: int,
    as_json: bool,
    every,
    smooth,
    options: dict,
    trust_model: bool = False,
) -> None:
    from actrec.export.stream_predict import StreamingModel, stream_predictions

    model = StreamingModel(model_dir, trust_model, **options)
    steps = 0
    for step in stream_predictions(model, source, every, smooth, top_k):
        steps += 1
        click.echo(json.dumps(step.to_dict()) if as_json else _line(step))
    if steps == 0:
        error_console().print(f"{source}: no frame could be read", markup=False)
        raise SystemExit(1)
