"""`actrec eval`: evaluate trained runs under a test protocol, and fuse streams."""

from __future__ import annotations

from pathlib import Path

import click
from actrec_cli.argument_checks import check_eval_arguments
from actrec_cli.console import import_tensorflow_quietly, progress_for
from actrec_cli.eval_options import fusion_options, protocol_options
from actrec_cli.eval_streams import stream_evaluation
from actrec_cli.eval_tables import print_evaluations
from actrec_cli.options import checkpoint_option, score_average_option

from actrec.cluster.strategy import cluster_from_environment
from actrec.errors import ConfigError
from actrec.evaluation.evaluate import evaluate_run, fuse_evaluations
from actrec.evaluation.protocols import resolve_protocol


@click.command(name="eval")
@click.argument("run_dir", metavar="RUN", required=False, type=click.Path(path_type=Path))
@click.option(
    "--data",
    "data_dir",
    type=click.Path(path_type=Path),
    help="Prepared data folder [default: the one the run was trained on].",
)
@click.option("--split", default="test", show_default=True, help="Split to evaluate.")
@protocol_options
@fusion_options
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
@click.option(
    "--wait-timeout",
    "wait_seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=600,
    show_default=True,
    help="On several workers (`actrec launch`, TF_CONFIG, Slurm): seconds the chief waits "
    "for another worker's next part of the scores before it stops, naming that worker "
    "(exit 75; the same command again resumes from the saved parts).",
)
@click.option(
    "--resume",
    is_flag=True,
    hidden=True,
    help="Accepted for `actrec launch --restarts`: an evaluation always resumes from its "
    "saved parts.",
)
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
    wait_seconds,
    resume,
):
    """Evaluate RUN (or --fuse two streams) under a test protocol: top-1, top-5 and mean class
    accuracy, per-class CSV, confusion matrix PNG and per-video scores.

    Under `actrec launch -n N`, TF_CONFIG or Slurm the videos are shared by the workers and
    the chief (worker 0) writes and prints the results; a killed evaluation resumes from
    the parts of the scores it saved (docs/cluster.md)."""
    if (run_dir is None) == (not fuse):
        raise ConfigError("give either RUN, or --fuse RGB FLOW (two runs or saved scores)")
    if weights is not None and not fuse:
        raise ConfigError("--weights applies to --fuse; give --fuse RGB FLOW as well")
    protocol = resolve_protocol(protocol_name, segments, clips, int(crops) if crops else None)
    if force and not fuse:
        raise ConfigError("--force applies to --fuse (a single RUN is always evaluated)")
    check_eval_arguments(run_dir, data_dir, out_dir)  # before TensorFlow: answered at once
    is_chief = cluster_from_environment().is_chief  # a bad TF_CONFIG fails here
    options = {
        "data_dir": data_dir,
        "split": split,
        "view_batch": view_batch,
        "checkpoint": checkpoint,
        "average": average,
        "wait_seconds": wait_seconds,
    }
    if fuse:
        streams = [stream_evaluation(source, protocol, options, force) for source in fuse]
        evaluations = [*streams, fuse_evaluations(streams, weights, out_dir)] if is_chief else []
    else:
        import_tensorflow_quietly()
        evaluation = evaluate_run(
            run_dir, protocol, out_dir=out_dir, progress=progress_for("videos"), **options
        )
        evaluations = [evaluation] if is_chief else []
    if not evaluations:
        return  # another worker's share is saved; the chief prints the results
    print_evaluations(evaluations, protocol.name, split)
