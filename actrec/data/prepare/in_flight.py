"""The in-flight loop of every preparation executor: tasks submitted ahead, results taken
back in task order.

Results come back in the order of the tasks, so shards, their boundaries and the manifest are
the same bytes whatever the executor, its number of workers or the order tasks finish in.
At most `limit` tasks are in flight, which bounds memory (a process pool's queue, Ray's
object store) when one video is slow. An executor whose workers can all be lost at once (a
process pool that a crashing decoder breaks) raises WindowLostError from `collect`: the loop puts
every other in-flight task back at the head of the queue and asks `recover` for the oldest
one's result alone. When a task's error (or Ctrl-C while waiting) stops the loop, `cancel`
is given every other in-flight task's handle before the error is raised again, so no work
goes on for a run that has stopped.

concurrent.futures and Ray each have a wait-for-any, but neither keeps task order nor a
bounded window by itself; this loop is the one place that does, for both.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

Task = TypeVar("Task")
Result = TypeVar("Result")


class WindowLostError(Exception):
    """Raised by `collect` when the in-flight tasks' workers are gone (a broken pool)."""


def results_in_order(
    tasks: Iterable[Task],
    submit: Callable[[Task], Any],
    collect: Callable[[Task, Any], Result],
    limit: int,
    recover: Callable[[Task], Result] | None = None,
    cancel: Callable[[Any], object] | None = None,
) -> Iterator[Result]:
    """Yield collect(task, submit(task)) for every task, in task order, with at most `limit`
    tasks submitted and not yet collected. When `collect` raises WindowLostError, the other
    in-flight tasks are submitted again later and `recover(task)` gives the oldest one's
    result (without `recover`, WindowLostError propagates). When `submit`, `collect` or
    `recover` raises anything else, `cancel(handle)` is called on every handle still in
    flight, oldest first, and the error is raised again. Closing the generator early (its
    consumer stopped) cancels nothing here: the executor's own clean-up does."""
    pending = deque(tasks)
    window: deque = deque()  # (task, what submit returned), oldest first
    while pending or window:
        try:
            while pending and len(window) < max(1, limit):
                task = pending.popleft()
                window.append((task, submit(task)))
            task, handle = window.popleft()
            try:
                result = collect(task, handle)
            except WindowLostError:
                if recover is None:
                    raise
                for other_task, _ in reversed(window):
                    pending.appendleft(other_task)
                window.clear()
                result = recover(task)
        except BaseException:
            if cancel is not None:
                for _, other_handle in window:
                    cancel(other_handle)
            raise
        yield result
