"""`actrec export`: a trained run (or an RGB and a flow run, fused) as a deployable model."""

from __future__ import annotations

from pathlib import Path

import click
from actrec_cli.argument_checks import check_export_arguments
from actrec_cli.console import console, import_tensorflow_quietly, progress_for
from actrec_cli.export_options import quantization_options, quantization_settings
from actrec_cli.options import (
    checkpoint_option,
    format_options,
    parse_fusion_weights,
    score_average_option,
)

from actrec.export.formats.registry import (
    DEFAULT_FORMAT,
    all_quantizations,
    export_format,
    format_names,
)
from actrec.export.writer import export_runs


def _format_help() -> str:
    return "; ".join(f"{name}: {export_format(name).summary}" for name in format_names()) + "."


def _quantize_help() -> str:
    return "; ".join(
        f"--format {name}: {export_format(name).quantize_help}"
        for name in format_names()
        if len(export_format(name).quantizations) > 1
    )


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option(
    "--fuse",
    "other_run",
    type=click.Path(path_type=Path),
    help="A second run to fuse with RUN_DIR: one RGB and one flow run, in either order.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    required=True,
    help="Folder for the exported model (must not exist, or be empty).",
)
@click.option(
    "--weights",
    callback=parse_fusion_weights,
    default="1,1.5",
    show_default=True,
    metavar="RGB,FLOW",
    help="Two-stream fusion weights.",
)
@score_average_option("the two-stream fusion (as in `actrec eval`)")
@click.option(
    "--top-k",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Classes in the top-k outputs (at most the number of classes).",
)
@click.option(
    "--format",
    "model_format",
    type=click.Choice(format_names()),
    default=DEFAULT_FORMAT,
    show_default=True,
    help=_format_help(),
)
@click.option(
    "--quantize",
    type=click.Choice(all_quantizations()),
    default="none",
    show_default=True,
    help=_quantize_help(),
)
@format_options("options")
@quantization_options
@click.option(
    "--data",
    "data_dir",
    type=click.Path(path_type=Path),
    help="The prepared data the run(s) trained on, if it has moved (its preparation "
    "settings are recorded for `actrec predict`).",
)
@click.option(
    "--streaming",
    is_flag=True,
    help="Export an online TSM (model.shift_direction=online) as a frame-by-frame model: "
    "one frame and the shift state in, the prediction and the new state out "
    "(`actrec predict SOURCE --model OUT --stream`).",
)
@click.option("--overwrite", is_flag=True, help="Replace an earlier export in --out.")
@checkpoint_option
def export(
    run_dir,
    other_run,
    out_dir,
    weights,
    average,
    top_k,
    model_format,
    data_dir,
    overwrite,
    streaming,
    checkpoint,
    quantize,
    **format_options,
):
    """Export RUN_DIR (a finished `actrec train` --workdir) as a TensorFlow SavedModel that
    takes decoded uint8 frames (and flow) of any size and returns class probabilities and
    the top-k class names, with actrec.json, classes.txt, the recipe and MODEL_CARD.md."""
    quantization = quantization_settings(format_options)
    runs = [run_dir] if other_run is None else [run_dir, other_run]
    # before TensorFlow: at once
    check_export_arguments(runs, out_dir, data_dir, overwrite, quantization.calibration_data)
    import_tensorflow_quietly()

    summary = export_runs(
        runs,
        out_dir,
        model_format=model_format,
        fusion_weights=weights,
        fusion_average=average,
        top_k=top_k,
        overwrite=overwrite,
        data_dir=data_dir,
        progress=progress_for("steps"),
        checkpoint=checkpoint,
        streaming=streaming,
        quantize=quantize,
        quantization=quantization,
        **format_options,
    )
    kind = "two-stream" if len(summary.modalities) == 2 else summary.modalities[0]
    if streaming:
        kind = "streaming " + ("MoViNet" if summary.architecture == "movinet" else "online TSM")
    where = (
        "reloaded in a fresh Python process as its model card says"
        if summary.reloaded_in_fresh_process
        else "reloaded in this process"
    )
    check = f"{where}, the model matches within {summary.reload_difference:.1e}"
    if quantize != "none":
        check = (
            f"{quantize} quantisation moves the outputs by up to "
            f"{summary.reload_difference:.1e} on random inputs"
        )
    model_format = summary.model_format + ("" if quantize == "none" else f" {quantize}")
    if quantize != "none":
        console().print(
            "accuracy gate: "
            + (
                summary.gate.summary(quantize)
                if summary.gate is not None
                else "not measured ("
                + (
                    "a streaming model"
                    if streaming
                    else "no held-out clips: give --calibration-data PREPARED"
                )
                + ")"
            ),
            soft_wrap=True,
            highlight=False,
        )
    console().print(
        f"exported {kind} model ({len(summary.classes)} classes, {model_format}) to "
        f"{summary.out_dir} in {summary.seconds:.0f} s; {check}",
        soft_wrap=True,
        highlight=False,
    )
