"""Python's cyclic garbage collector in the processes that run tests (the xdist workers, or
pytest itself with -n 0).

A worker imports TensorFlow, Keras, PyTorch and JAX once and keeps many networks and traced
graphs alive for its module fixtures, so its heap holds millions of objects, and CPython's
full collections scan all of them: 15 % of a worker's CPU in tests/export/test_export.py and
tests/train/test_train.py (20 full collections, 4.8 s of 31 s; measured with gc.callbacks).
Freezing what the imports made (gc.freeze: the collector skips those objects; reference
counting still frees them) and collecting the youngest generation every 10000 allocations
instead of 700, after collection, brought that to 2.0 s and the process to 26.5 s
(docs/benchmarks.md, "The test suite's time"). The `actrec` processes the tests start
keep CPython's defaults, as a user's do: their heaps are small and the same settings did
not change a training's time there."""

from __future__ import annotations

import gc

YOUNGEST_GENERATION_ALLOCATIONS = 10_000
"""Allocations less deallocations between collections of the youngest generation (CPython's
default: 700)."""
COLLECTIONS_BEFORE_OLDER = (20, 100)
"""Collections of generation 0 before one of generation 1, and of 1 before a full one
(CPython's: 10, 10)."""


def settle_garbage_collection() -> None:
    """Freeze the objects made so far (the test modules and what they imported, Keras and
    TensorFlow always among them) and widen the collection thresholds: once per process,
    after collection, before its first test."""
    import keras  # noqa: F401  (imported by the fixtures in any case: frozen below)

    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNGEST_GENERATION_ALLOCATIONS, *COLLECTIONS_BEFORE_OLDER)
