"""Encode videos in worker processes and hand the results back in list order.

Results come back in the order of the tasks, so shards, their boundaries and the
manifest are identical whatever the number of workers or interruptions. At most
`4 * workers` videos are in flight, which bounds memory when one video is slow.

A decoder that crashes its process (a segfault on a corrupt file) does not stop the run:
the in-flight videos are retried, the crashing one alone in its own process, and it is
skipped as undecodable, unless a fresh process cannot run any task at all (then every video
would be "undecodable": ProcessStartError says why).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Protocol

from actrec.data.prepare.encode_video import (
    PrepareSettings,
    VideoResult,
    VideoTask,
    encode_video,
    initialise_worker,
)
from actrec.errors import ProcessStartError

TASKS_IN_FLIGHT_PER_WORKER = 4


def _initialise_pool_worker() -> None:
    # Ctrl-C goes to the whole process group; the parent decides how to stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    initialise_worker()


def _new_pool(workers: int) -> ProcessPoolExecutor:
    # spawn, not fork: the parent may have imported TensorFlow, which is not fork-safe.
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_initialise_pool_worker,
    )


PROCESSES_DO_NOT_START = (
    "the worker processes that encode the videos exit before they run anything, so every "
    "video would be reported undecodable. They are started with multiprocessing's spawn, "
    "which imports the calling script again: in a script that calls prepare_dataset, put "
    'the code under `if __name__ == "__main__":`, or prepare with one worker (workers=1)'
)


def _processes_start() -> bool:
    """Whether a fresh worker process starts and runs a task."""
    pool = _new_pool(1)
    try:
        return pool.submit(os.getpid).result() > 0
    except BrokenProcessPool:
        return False
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _encode_isolated(task: VideoTask, settings: PrepareSettings) -> VideoResult:
    """Encode one video alone in a fresh process; a crash skips it as undecodable (a
    ProcessStartError when no fresh process runs anything)."""
    pool = _new_pool(1)
    try:
        return pool.submit(encode_video, task, settings).result()
    except BrokenProcessPool:
        if not _processes_start():
            raise ProcessStartError(PROCESSES_DO_NOT_START) from None
        return VideoResult.skipped(
            task, "undecodable", "the video decoder crashed its process on this file"
        )
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def encode_in_order(
    tasks: Iterable[VideoTask], settings: PrepareSettings, workers: int
) -> Iterator[VideoResult]:
    """Yield encode_video(task) for every task, in task order, using `workers` processes."""
    if workers <= 1:
        initialise_worker()
        for task in tasks:
            yield encode_video(task, settings)
        return
    pending = deque(tasks)
    window: deque[tuple[VideoTask, Future]] = deque()
    pool = _new_pool(workers)
    try:
        while pending or window:
            while pending and len(window) < workers * TASKS_IN_FLIGHT_PER_WORKER:
                task = pending.popleft()
                window.append((task, pool.submit(encode_video, task, settings)))
            task, future = window.popleft()
            try:
                result = future.result()
            except BrokenProcessPool:
                # Some in-flight video crashed the pool. Run the oldest alone; requeue the rest
                # (a crashing video reaches the head of the queue eventually and is isolated).
                pool.shutdown(wait=True, cancel_futures=True)
                for other_task, _ in reversed(window):
                    pending.appendleft(other_task)
                window.clear()
                result = _encode_isolated(task, settings)
                pool = _new_pool(workers)
            yield result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


class Executor(Protocol):
    """Where videos are encoded: this machine's processes (LocalPool) or a Ray cluster
    (actrec.data.prepare.ray_executor.RayExecutor). Either hands the results back in task
    order, so the shards written from them are the same bytes."""

    def check_nodes(self, paths: Sequence[str]) -> None:
        """Raise ClusterError when a machine that will encode cannot read `paths`."""

    def encode_in_order(
        self, tasks: Iterable[VideoTask], settings: PrepareSettings
    ) -> Iterator[VideoResult]:
        """Yield encode_video(task) for every task, in task order."""


@dataclass(frozen=True)
class LocalPool:
    """`workers` processes of this machine (encode_in_order); it reads what the listing read."""

    workers: int

    def check_nodes(self, paths: Sequence[str]) -> None:
        return None

    def encode_in_order(
        self, tasks: Iterable[VideoTask], settings: PrepareSettings
    ) -> Iterator[VideoResult]:
        return encode_in_order(tasks, settings, self.workers)
