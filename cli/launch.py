"""`actrec launch`: run a command as N local multi-worker training processes."""

from __future__ import annotations

import sys

import click
from actrec_cli.console import error_console

from actrec.cluster.restarts import run_local_workers_restarting


def _exit_line(worker_exit) -> str:
    if worker_exit.exit_code == 0:
        status = "[green]finished[/]"
    elif worker_exit.stopped_by_launcher:
        status = f"[yellow]stopped by the launcher[/] (exit code {worker_exit.exit_code})"
    else:
        status = f"[bold red]failed with exit code {worker_exit.exit_code}[/]"
    return f"worker {worker_exit.index} {status} after {worker_exit.seconds:.1f} s"


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option(
    "-n",
    "--num-workers",
    type=click.IntRange(min=1),
    required=True,
    help="Worker processes to start (one per GPU on a GPU machine).",
)
@click.option(
    "--port",
    "base_port",
    type=click.IntRange(1024, 65535),
    default=None,
    help="First of the workers' consecutive ports [default: free ports].",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Stop every worker after this many seconds (exit code 124).",
)
@click.option(
    "--grace-period",
    type=click.FloatRange(min=0),
    default=10.0,
    show_default=True,
    help="Seconds between SIGTERM and SIGKILL when workers are stopped.",
)
@click.option(
    "--restarts",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="When a worker dies (killed by a signal, or exit 75: it lost a peer), stop the others "
    "and start every worker again with --resume, up to this many times.",
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def launch(num_workers, base_port, timeout, grace_period, restarts, command):
    """Run COMMAND as NUM_WORKERS cluster workers on this machine.

    Each worker gets its own TF_CONFIG (and GPU when there are GPUs); output lines are
    prefixed "[worker i] ". When one worker fails the others are stopped, and the exit
    code is the failing worker's. For example:

    \b
        actrec launch -n 2 -- actrec train --recipe tsm-kinetics400 \\
            --data DATA --workdir RUN
    """
    errors = error_console()

    def report(worker_exit):
        errors.print(_exit_line(worker_exit), highlight=False, soft_wrap=True)

    def restarting(restart, failed):
        errors.print(
            f"[yellow]restart {restart} of {restarts}:[/] worker {failed.failed_worker} failed "
            f"(exit code {failed.exit_code}); starting all {num_workers} workers again with "
            "--resume",
            highlight=False,
            soft_wrap=True,
        )

    result = run_local_workers_restarting(
        num_workers,
        list(command),
        restarts,
        base_port=base_port,
        timeout=timeout,
        grace_period=grace_period,
        on_worker_exit=report,
        on_restart=restarting,
    )
    if result.exit_code == 0:
        errors.print(f"all {num_workers} workers finished", highlight=False)
    elif result.timed_out:
        errors.print(
            f"[bold red]timeout:[/] stopped the workers after {timeout:g} s", highlight=False
        )
    else:
        errors.print(
            f"[bold red]worker {result.failed_worker} failed[/] (exit code "
            f"{result.exit_code}); the other workers were stopped",
            highlight=False,
        )
    sys.exit(result.exit_code)
