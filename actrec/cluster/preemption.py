"""Preemption: SIGTERM asks a training run to checkpoint at its next step and stop.

`actrec train` then exits with PREEMPTED_EXIT_CODE (128 + SIGTERM, what a scheduler expects
of a process it terminated), and `--resume` continues from that checkpoint.
"""

from __future__ import annotations

import signal

PREEMPTED_EXIT_CODE = 143


class TerminationFlag:
    """Set by SIGTERM (preemption); training checkpoints at the next step and stops."""

    def __init__(self):
        self.raised = False
        self._previous = None

    def install(self) -> None:
        try:
            self._previous = signal.signal(signal.SIGTERM, self._handle)
        except ValueError:  # not the main thread (e.g. some test runners): no preemption
            self._previous = None

    def _handle(self, signum, frame) -> None:
        self.raised = True

    def uninstall(self) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)
