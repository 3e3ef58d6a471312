"""The local executor (`actrec prepare --executor local`, the default): videos encoded in
`--workers` processes of this machine, results back in task order
(actrec.data.prepare.in_flight), at most TASKS_IN_FLIGHT_PER_WORKER per worker in flight.

A decoder that crashes its process (a segfault on a corrupt file) does not stop the run:
the in-flight videos are retried, the crashing one alone in its own process, and it is
skipped as undecodable, unless a fresh process cannot run any task at all (then every video
would be "undecodable": ProcessStartError says why).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TYPE_CHECKING

from actrec.data.prepare.executors.registry import ExecutorKind
from actrec.data.prepare.in_flight import WindowLostError, results_in_order
from actrec.errors import ProcessStartError

if TYPE_CHECKING:
    from actrec.data.prepare.encode_video import PrepareSettings, VideoResult, VideoTask

TASKS_IN_FLIGHT_PER_WORKER = 4


def _initialise_pool_worker() -> None:
    # inside: the registry imports every executor to list it, and encode_video loads OpenCV
    from actrec.data.prepare.encode_video import initialise_worker

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
    # inside: OpenCV, as _initialise_pool_worker's
    from actrec.data.prepare.encode_video import VideoResult, encode_video

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
    # inside: OpenCV, as _initialise_pool_worker's
    from actrec.data.prepare.encode_video import encode_video, initialise_worker

    if workers <= 1:
        initialise_worker()
        for task in tasks:
            yield encode_video(task, settings)
        return
    pools = [_new_pool(workers)]  # the current pool; replaced when a crash breaks it

    def collect(task, future) -> VideoResult:
        try:
            return future.result()
        except BrokenProcessPool:
            raise WindowLostError from None

    def recover(task) -> VideoResult:
        # Some in-flight video crashed the pool. Run the oldest alone; the loop requeues the
        # rest (a crashing video reaches the head of the queue eventually and is isolated).
        pools[0].shutdown(wait=True, cancel_futures=True)
        result = _encode_isolated(task, settings)
        pools[0] = _new_pool(workers)
        return result

    try:
        yield from results_in_order(
            tasks,
            lambda task: pools[0].submit(encode_video, task, settings),
            collect,
            workers * TASKS_IN_FLIGHT_PER_WORKER,
            recover,
            cancel=Future.cancel,  # those not started; shutdown waits for the running ones
        )
    finally:
        pools[0].shutdown(wait=True, cancel_futures=True)


@dataclass(frozen=True)
class LocalPool:
    """`workers` processes of this machine (encode_in_order); it reads what the listing
    read."""

    workers: int

    def check_nodes(self, paths: Sequence[str]) -> None:
        return None

    def encode_in_order(
        self, tasks: Iterable[VideoTask], settings: PrepareSettings
    ) -> Iterator[VideoResult]:
        return encode_in_order(tasks, settings, self.workers)


@contextlib.contextmanager
def _open(workers: int) -> Iterator[LocalPool]:
    yield LocalPool(workers)


EXECUTOR = ExecutorKind(
    name="local",
    summary="this machine's processes (--workers of them)",
    open=_open,
)
