"""actrec.progress.Progress as complete plain lines, for output that is not a terminal.

A Slurm output file, `actrec launch`'s "[worker i] " prefixes or `> log` cannot show a
redrawn progress bar: rich would print its last frame squeezed into 80 columns, with the
values cut ("loss 2.243 accuracy 0.0625 lr … batch… E…"). This writes one whole line per
report instead, never wrapped or cut:

    epoch 2/2 3/3 (100%) 7.5 steps/s 20 clips/s loss 2.009 accuracy 0 lr 0.0001005
    batch 4 recoveries 1 elapsed 0:00:00 ETA 0:00:00

(on one line). A line is written every `every` units when given (the training log
interval), else at most every `interval_seconds`, and once more when the stage finishes.
"""

from __future__ import annotations

import time
from datetime import timedelta

from rich.console import Console

DEFAULT_INTERVAL_SECONDS = 30.0


def format_value(value: object) -> str:
    """4 significant digits for floats ("0.001", "2.243", "nan"); str() otherwise."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _duration(seconds: float) -> str:
    return str(timedelta(seconds=round(max(seconds, 0.0))))


class LineProgress:
    """Progress reported as plain lines on `out` (see the module docstring)."""

    def __init__(
        self,
        unit: str | None,
        out: Console,
        every: int | None = None,
        interval_seconds: float = DEFAULT_INTERVAL_SECONDS,
    ):
        self.unit = unit
        self.console = out
        self.every = every
        self.interval_seconds = interval_seconds
        self._description: str | None = None
        self._total: int | None = None
        self._done = 0
        self._counters: dict[str, float] = {}
        self._values: dict[str, object] = {}
        self._started = 0.0
        self._last_line_at = 0.0
        self._last_line_done: int | None = None

    def start(self, description: str, total: int | None) -> None:
        self.finish()
        self._description, self._total = description, total
        self._done, self._counters, self._values = 0, {}, {}
        self._started = self._last_line_at = time.monotonic()
        self._last_line_done = None

    def advance(self, amount: int = 1, **counters: float) -> None:
        if self._description is None:
            return
        self._done += amount
        for name, value in counters.items():
            self._counters[name] = self._counters.get(name, 0.0) + value
        if not self.every:  # with `every`, the line waits for show()'s values of this unit
            self._write_if_due()

    def show(self, **values: object) -> None:
        """Latest values; a line is due when the units done reach the interval."""
        if self._description is None:
            return
        self._values = dict(values)
        self._write_if_due()

    def message(self, text: str) -> None:
        self.console.print(text, highlight=False, soft_wrap=True)

    def finish(self) -> None:
        if self._description is not None and self._last_line_done != self._done:
            self._write_line()
        self._description = None

    def _write_if_due(self) -> None:
        if self.every:
            due = self._done % self.every == 0 and self._done != self._last_line_done
        else:
            due = time.monotonic() - self._last_line_at >= self.interval_seconds
        if due:
            self._write_line()

    def line(self) -> str:
        """The current state as one line (what is written)."""
        elapsed = max(time.monotonic() - self._started, 1e-6)
        parts = [str(self._description)]
        if self._total:
            parts.append(f"{self._done}/{self._total} ({100 * self._done / self._total:.0f}%)")
        else:
            parts.append(str(self._done))
        if self.unit:
            parts.append(f"{self._done / elapsed:.1f} {self.unit}/s")
        parts += [f"{value / elapsed:.0f} {name}/s" for name, value in self._counters.items()]
        parts += [f"{name} {format_value(value)}" for name, value in self._values.items()]
        parts.append(f"elapsed {_duration(elapsed)}")
        if self._total and self._done:
            remaining = elapsed * (self._total - self._done) / self._done
            parts.append(f"ETA {_duration(remaining)}")
        return " ".join(parts)

    def _write_line(self) -> None:
        self.console.print(self.line(), highlight=False, markup=False, soft_wrap=True)
        self._last_line_at = time.monotonic()
        self._last_line_done = self._done
