"""The progress protocol through which the library reports slow work.

The library calls these methods; the CLI implements them with rich. `NullProgress`
is the default, so library code never checks for None.
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def start(self, description: str, total: int | None) -> None:
        """A stage begins; `total` units of work (None when unknown)."""

    def advance(self, amount: int = 1, **counters: float) -> None:
        """`amount` units finished; `counters` add to named totals (e.g. frames=120)."""

    def show(self, **values: object) -> None:
        """Latest values to display beside the progress (loss=0.4, lr=0.01, ...); any value
        that formats as text (hence `object`)."""

    def message(self, text: str) -> None:
        """A line for the user that is not an error (a skipped video, a resumed run)."""

    def finish(self) -> None:
        """The current stage is over."""


class NullProgress:
    """Progress that reports nothing."""

    def start(self, description: str, total: int | None) -> None:
        pass

    def advance(self, amount: int = 1, **counters: float) -> None:
        pass

    def show(self, **values: object) -> None:
        pass

    def message(self, text: str) -> None:
        pass

    def finish(self) -> None:
        pass
