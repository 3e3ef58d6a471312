"""`actrec launch --restarts N`: start the local workers again with --resume after a
failure a restart can get past (torchrun's --max-restarts), over actrec.cluster.launch.

No TensorFlow here, as in actrec.cluster.launch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from actrec.cluster.launch import LaunchResult, run_local_workers
from actrec.errors import RESTART_EXIT_CODE, ConfigError


def is_restartable(exit_code: int) -> bool:
    """A failure that a restart with --resume can get past: a worker killed by a signal
    (exit 128 + N: a crash, the OOM killer, a lost node) or one that lost a peer
    (actrec.errors.RESTART_EXIT_CODE); not a bad option or recipe (1), which would fail
    again."""
    return exit_code == RESTART_EXIT_CODE or exit_code > 128


def resumed_command(command: Sequence[str]) -> list[str]:
    """`command` with --resume (an `actrec train` command continues from its checkpoint)."""
    command = list(command)
    return command if "--resume" in command else [*command, "--resume"]


def run_local_workers_restarting(
    num_workers: int,
    command: Sequence[str],
    restarts: int,
    *,
    on_restart: Callable[[int, LaunchResult], None] | None = None,
    **options,
) -> LaunchResult:
    """`run_local_workers`, started again with --resume after a restartable failure
    (`is_restartable`), up to `restarts` times (torchrun's --max-restarts). on_restart is
    called with the restart's number (1-based) and the failed launch; `options` are
    run_local_workers' (a timeout applies to each start). Returns the last launch."""
    if restarts < 0:
        raise ConfigError(f"--restarts {restarts} is not valid; give 0 or more")
    result = run_local_workers(num_workers, command, **options)
    for restart in range(1, restarts + 1):
        if result.exit_code == 0 or result.timed_out or not is_restartable(result.exit_code):
            break
        if on_restart is not None:
            on_restart(restart, result)
        command = resumed_command(command)
        result = run_local_workers(num_workers, command, **options)
    return result
