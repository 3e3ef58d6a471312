"""`actrec eval`: evaluate trained runs under a test protocol, and fuse streams."""

from __future__ import annotations

from pathlib import Path

import click
from actrec_cli.console import console, import_tensorflow_quietly, progress_for
from actrec_cli.options import checkpoint_option, parse_fusion_weights, score_average_option
from rich.table import Table

from actrec.evaluation.protocols import DEFAULT_PROTOCOL, PROTOCOLS

PROTOCOL_HELP = "; ".join(f"{name}: {protocol.description}" for name, protocol in PROTOCOLS.items())


def _is_run_directory(path: Path) -> bool:
    from actrec.runs import RECIPE_FILE

    return path.is_dir() and (path / RECIPE_FILE).is_file()


def _stream(source: Path, protocol, options: dict, force: bool):
    """A run directory is evaluated (unless its evaluation under the same protocol, split,
    view average, data and weights is already saved and not `force`); an eval folder or
    scores.npz is loaded as saved."""
    from actrec.errors import ConfigError
    from actrec.evaluation.evaluate import evaluate_run, load_evaluation, saved_run_evaluation
    from actrec.evaluation.scores import SCORES_FILE

    if _is_run_directory(source):
        if not force:
            saved = saved_run_evaluation(
                source,
                protocol,
                data_dir=options["data_dir"],
                split=options["split"],
                checkpoint=options["checkpoint"],
                average=options["average"],
            )
            if saved is not None:
                console().print(
                    f"{source}: reusing its saved evaluation {saved.out_dir} (same protocol, "
                    "split, data and weights; --force evaluates again)",
                    soft_wrap=True,
                    highlight=False,
                )
                return saved
        import_tensorflow_quietly()
        return evaluate_run(source, protocol, progress=progress_for("videos"), **options)
    if source.is_file() or (source / SCORES_FILE).is_file():
        return load_evaluation(source)
    raise ConfigError(
        f"{source} is neither a run directory (the --workdir of `actrec train`) nor saved "
        f"scores (an eval folder or its {SCORES_FILE})"
    )


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def _summary_table(evaluations, title: str) -> Table:
    table = Table(title=title)
    for column in ("stream", "modality", "top-1 %", "top-5 %", "mean class %", "videos", "views"):
        table.add_column(column, justify="left" if column in ("stream", "modality") else "right")
    for evaluation in evaluations:
        metrics = evaluation.metrics
        views = evaluation.results.get("views_per_video")
        table.add_row(
            evaluation.name,
            evaluation.modality or "-",
            _percent(metrics.top1 if metrics else None),
            _percent(metrics.top5 if metrics else None),
            _percent(metrics.mean_class_accuracy if metrics else None),
            str(len(evaluation.scores.video_ids)),
            "-" if views is None else str(views),
        )
    return table


@click.command(name="eval")
@click.argument("run_dir", metavar="RUN", required=False, type=click.Path(path_type=Path))
@click.option(
    "--data",
    "data_dir",
    type=click.Path(path_type=Path),
    help="Prepared data folder [default: the one the run was trained on].",
)
@click.option("--split", default="test", show_default=True, help="Split to evaluate.")
@click.option(
    "--protocol",
    "protocol_name",
    type=click.Choice(list(PROTOCOLS)),
    default=DEFAULT_PROTOCOL,
    show_default=True,
    help=f"Test protocol. {PROTOCOL_HELP}.",
)
@click.option("--segments", type=click.IntRange(min=1), help="Override the protocol's segments.")
@click.option("--clips", type=click.IntRange(min=1), help="Override the protocol's clips.")
@click.option("--crops", type=click.Choice(["1", "3", "10"]), help="Override the protocol's crops.")
@click.option(
    "--fuse",
    nargs=2,
    type=click.Path(path_type=Path),
    metavar="RGB FLOW",
    help="Evaluate two streams and their fusion: each a run directory, or the saved scores "
    "of an earlier evaluation (its folder or scores.npz).",
)
@click.option(
    "--weights",
    callback=parse_fusion_weights,
    metavar="W1,W2",
    help="Fusion weights in the order of --fuse [default: RGB 1, flow 1.5].",
)
@score_average_option("a video's score over its views (and a fusion of streams)")
@click.option(
    "--force",
    is_flag=True,
    default=False,
    help="With --fuse: evaluate run directories again even when their evaluation under the "
    "same protocol, split, data and weights is saved (by default it is reused).",
)
@click.option(
    "--batch-size",
    "view_batch",
    type=click.IntRange(min=1),
    default=32,
    show_default=True,
    help="Views per forward pass (bounds memory whatever the protocol).",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    help="Folder for the results [default: RUN/eval/SPLIT-PROTOCOL (-best with --checkpoint "
    "best); for --fuse, fused-A-B beside the first stream's].",
)
@checkpoint_option
def eval_command(
    run_dir,
    data_dir,
    split,
    protocol_name,
    segments,
    clips,
    crops,
    fuse,
    weights,
    force,
    average,
    view_batch,
    out_dir,
    checkpoint,
):
    """Evaluate RUN (or --fuse two streams) under a test protocol: top-1, top-5 and mean class
    accuracy, per-class CSV, confusion matrix PNG and per-video scores."""
    from actrec.errors import ConfigError
    from actrec.evaluation.evaluate import evaluate_run, fuse_evaluations
    from actrec.evaluation.protocols import resolve_protocol

    if (run_dir is None) == (not fuse):
        raise ConfigError("give either RUN, or --fuse RGB FLOW (two runs or saved scores)")
    if weights is not None and not fuse:
        raise ConfigError("--weights applies to --fuse; give --fuse RGB FLOW as well")
    protocol = resolve_protocol(protocol_name, segments, clips, int(crops) if crops else None)
    if force and not fuse:
        raise ConfigError("--force applies to --fuse (a single RUN is always evaluated)")
    options = {
        "data_dir": data_dir,
        "split": split,
        "view_batch": view_batch,
        "checkpoint": checkpoint,
        "average": average,
    }
    if fuse:
        streams = [_stream(source, protocol, options, force) for source in fuse]
        evaluations = [*streams, fuse_evaluations(streams, weights, out_dir)]
    else:
        import_tensorflow_quietly()
        evaluations = [
            evaluate_run(
                run_dir, protocol, out_dir=out_dir, progress=progress_for("videos"), **options
            )
        ]
    title = f"{protocol.name} on {evaluations[0].results.get('split', split)}"
    console().print(_summary_table(evaluations, title))
    console().print(
        f"views and streams averaged as {evaluations[-1].scores.average}; mean class accuracy "
        "is the figure TSN reports for UCF101 and HMDB51 (tools/eval_net.py)",
        highlight=False,
        soft_wrap=True,
    )
    if evaluations[-1].metrics is None:
        console().print("the split is unlabelled: scores saved, no accuracy")
    for evaluation in evaluations:
        console().print(f"{evaluation.name}: {evaluation.out_dir}", soft_wrap=True)
