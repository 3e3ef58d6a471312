"""A training's input iterator is torn down on a thread of its own: its destructor can wait up
to a minute for tf.data's autotuning thread (actrec.train.input_pipelines)."""

from __future__ import annotations

import threading

from actrec.train.input_pipelines import TEARDOWN_THREAD_NAME, PhaseBatches, drop_in_background


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
