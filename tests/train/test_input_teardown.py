"""A training's input iterator is torn down on a thread of its own: its destructor can wait up
to a minute for tf.data's autotuning thread (actrec.train.inputs.input_pipelines)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

from actrec.train.inputs.input_pipelines import (
    TEARDOWN_THREAD_NAME,
    PhaseBatches,
    drop_in_background,
)


class SlowToDestroy:
    """Records the thread its destructor runs on, and takes `seconds` there."""

    def __init__(self, seconds: float = 0.0):
        self.seconds = seconds
        self.destroyed_on: list[str] = []
        self.done = threading.Event()

    def watcher(self):
        return self.destroyed_on, self.done

    def __del__(self):
        self.done.wait(self.seconds)  # a wait as tf.data's: the caller must not see it
        self.destroyed_on.append(threading.current_thread().name)
        self.done.set()


def test_a_value_whose_last_reference_is_dropped_in_background_dies_on_its_thread():
    value = SlowToDestroy(seconds=0.5)
    destroyed_on, done = value.watcher()
    holder = [value]
    del value
    drop_in_background(holder)
    assert not done.is_set()  # the caller goes on at once, while the destructor waits
    assert done.wait(10) and destroyed_on == [TEARDOWN_THREAD_NAME]


def test_releasing_the_phase_iterator_hands_it_to_the_teardown_thread():
    batches = PhaseBatches(None, None, None, None, None, None)
    iterator = SlowToDestroy()
    destroyed_on, done = iterator.watcher()
    batches.batches = iterator
    del iterator
    batches.release()
    assert batches.batches is None  # the next epoch builds a new one
    assert done.wait(10) and destroyed_on == [TEARDOWN_THREAD_NAME]
    batches.release()  # nothing to release: nothing happens


# A process that drops a value as a training's iterator is dropped (its destructor waits a
# minute, on the teardown thread), then runs the `actrec` console script's entry point.
ENTRY_AFTER_A_SLOW_TEARDOWN = """
import sys, time
from actrec.train.inputs.input_pipelines import drop_in_background

class SlowToDestroy:
    def __del__(self):
        time.sleep(60)

drop_in_background([SlowToDestroy()])
sys.argv = ["actrec", *sys.argv[1:]]
from actrec_cli.main import run
run()
"""


def _ended_after(*arguments: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", ENTRY_AFTER_A_SLOW_TEARDOWN, *arguments],
        capture_output=True,
        text=True,
        timeout=55,  # less than the destructor's minute: a process that waits fails here
    )
    return result, time.monotonic() - started


def test_the_actrec_command_ends_without_waiting_for_a_pending_teardown():
    """`actrec train` sat 20 s after its last line, its process waiting for the teardown
    thread; the console script ends once the command returns, with the command's status and
    all its output."""
    result, seconds = _ended_after("recipes")
    assert result.returncode == 0, result.stderr
    assert "synthetic-tsm-online" in result.stdout and seconds < 40
    result, _ = _ended_after("recipes", "--no-such-option")
    assert result.returncode == 2 and "No such option" in result.stderr
