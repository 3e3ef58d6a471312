"""A lost worker, said in one message instead of a TensorFlow traceback.

When a peer process dies (SIGKILL, a crash) or stops answering (SIGSTOP, a hung node),
TensorFlow's coordination service notices by its heartbeats (measured with its default
10 s timeout: 1-7 s after a SIGKILL, 9-15 s after a SIGSTOP; 5 s after a SIGSTOP with
`runtime.peer_timeout` 3 s; a slow step does not stop heartbeats, so it cannot trigger
this) and
every surviving worker's next collective fails with UnavailableError / AbortedError ("Socket
closed", "tasks are unhealthy (stopped sending heartbeats)"). The survivor then stops with
WorkerLostError: which task was lost when TensorFlow names it, the step, the last checkpoint
(which is intact: only the chief writes it, atomically), and the fix (restart every worker
with --resume). Its exit status is RESTART_EXIT_CODE (actrec.errors), for schedulers that
restart on a given status (docs/cluster.md).
"""

from __future__ import annotations

import re

from actrec.errors import WorkerLostError

TASK_PATTERN = re.compile(r"/job:(\w+)/replica:\d+/task:(\d+)")


def is_collective_failure(error: BaseException) -> bool:
    """Whether `error` is a collective or coordination failure (a lost peer)."""
    import tensorflow as tf

    lost = (
        tf.errors.UnavailableError,
        tf.errors.AbortedError,
        tf.errors.DeadlineExceededError,
        tf.errors.CancelledError,
    )
    if isinstance(error, lost):
        return True
    text = str(error)
    return isinstance(error, tf.errors.InternalError) and (
        "Collective" in text or "coordination" in text.lower()
    )


def lost_tasks(message: str, task_index: int) -> list[str]:
    """The other tasks TensorFlow's message names ("worker 1", ...), in order, once each."""
    names = []
    for job, index in TASK_PATTERN.findall(message):
        if int(index) == task_index and job in ("worker", "chief"):
            continue
        name = f"{job} {index}"
        if name not in names:
            names.append(name)
    return names


TELLING_WORDS = ("abort", "closed", "unhealthy", "heartbeat", "deadline", "timed out", "connect")


def _telling_line(message: str) -> str:
    """The line of TensorFlow's message that says what happened (it starts with "Graph
    execution error:" and a stack of node names)."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    for line in lines:
        if any(word in line.lower() for word in TELLING_WORDS):
            return line
    return next((line for line in lines if line != "Graph execution error:"), "")


def worker_lost_error(error: BaseException, cluster, step: int, checkpoint: str | None):
    """The WorkerLostError of this worker's failed collective at `step`."""
    message = str(error)
    reason = _telling_line(message)
    if len(reason) > 200:
        reason = reason[:197] + "..."
    tasks = lost_tasks(message, cluster.task_index)
    who = ", ".join(tasks) if tasks else "a peer worker (TensorFlow does not say which)"
    kept = (
        f"the last checkpoint, {checkpoint}, is intact"
        if checkpoint
        else "no checkpoint was written yet: the run restarts from its beginning"
    )
    return WorkerLostError(
        f"worker {cluster.task_index} of {cluster.num_workers} lost {who} at step {step} "
        f"({type(error).__name__}: {reason}); {kept}. Restart every worker with the same "
        "command and --resume; this worker exits with status "
        f"{WorkerLostError.exit_code} (restart me)"
    )
