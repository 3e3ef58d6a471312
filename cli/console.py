"""Rich consoles and the rich implementation of actrec.progress.Progress."""

from __future__ import annotations

import os
import time

from actrec_cli.line_progress import LineProgress, format_value
from rich.console import Console, ConsoleDimensions
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from actrec.train.threads import use_threads_per_op

PIPED_WIDTH = 1000
"""Columns of output that is not a terminal (a pipe, a file, a test's capture): wide enough
that no table is cut or wrapped to fit, so `actrec recipes | cat` and `> file` keep every
word; a terminal's tables fit its own width."""


class _OutputConsole(Console):
    """A console drawn at PIPED_WIDTH when its file is not a terminal (decided at each print:
    the file can change, as under click's CliRunner; $COLUMNS, which rich would take for a
    pipe too, is for a terminal), else at the terminal's width."""

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        if self.is_terminal:
            return size
        return ConsoleDimensions(PIPED_WIDTH, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)


_STDOUT = _OutputConsole()
_STDERR = _OutputConsole(stderr=True)


def console() -> Console:
    return _STDOUT


def error_console() -> Console:
    return _STDERR


def progress_for(unit: str | None = "videos", every: int | None = None):
    """actrec.progress.Progress on stderr: a rich progress bar on a terminal, else complete
    plain lines (LineProgress: Slurm files, `actrec launch` prefixes, `> log`), one every
    `every` units when given (the training log interval), else every 30 s."""
    if _STDERR.is_terminal:
        return RichProgress(unit)
    return LineProgress(unit, _STDERR, every=every)


class RichProgress:
    """actrec.progress.Progress drawn as a rich progress bar with rates per counter.

    Shows units/s (e.g. videos/s; none when unit is None) and the rate of every named
    counter (e.g. frames/s).
    """

    def __init__(self, unit: str | None = "videos", out: Console | None = None):
        self.unit = unit
        self.console = out or _STDERR
        self._progress: Progress | None = None
        self._task = None
        self._counters: dict[str, float] = {}
        self._started = 0.0
        self._done = 0

    def start(self, description: str, total: int | None) -> None:
        self.finish()
        self._counters = {}
        self._done = 0
        self._started = time.monotonic()
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rates]}"),
            TextColumn("{task.fields[values]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task(description, total=total, rates="", values="")

    def advance(self, amount: int = 1, **counters: float) -> None:
        if self._progress is None:
            return
        self._done += amount
        for name, value in counters.items():
            self._counters[name] = self._counters.get(name, 0.0) + value
        elapsed = max(time.monotonic() - self._started, 1e-6)
        rates = [f"{self._done / elapsed:.1f} {self.unit}/s"] if self.unit else []
        rates += [f"{value / elapsed:.0f} {name}/s" for name, value in self._counters.items()]
        self._progress.update(self._task, advance=amount, rates=" ".join(rates))

    def show(self, **values: object) -> None:
        """Latest values (loss, accuracy, lr, ...) shown beside the bar."""
        if self._progress is None:
            return
        shown = " ".join(f"{name} {format_value(value)}" for name, value in values.items())
        self._progress.update(self._task, values=shown)

    def message(self, text: str) -> None:
        target = self._progress.console if self._progress is not None else self.console
        target.print(text, highlight=False)

    def finish(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def import_tensorflow_quietly(
    start_runtime: bool = True, threads_per_op: int | None = None
) -> None:
    """Import TensorFlow (and start its runtime, with `threads_per_op` threads an op: a
    recipe's runtime.threads_per_op) with file descriptor 2 silenced.

    TensorFlow 2.21 writes C++ start-up lines (oneDNN, CUDA probing) to stderr before its
    logging is configured, so TF_CPP_MIN_LOG_LEVEL cannot hide them. A Python error is
    still raised, and shown, after stderr is restored. Commands that create a
    multi-worker strategy pass start_runtime=False: no op may run before the strategy, but
    the devices are still listed here, silenced, because listing them is what probes CUDA
    (on a CPU machine: "failed call to cuInit", logged once at ERROR level, which
    TF_CPP_MIN_LOG_LEVEL=2 lets through) and listing does not start the runtime.
    """
    saved_stderr = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        import tensorflow as tf

        tf.config.list_physical_devices()
        if start_runtime:
            use_threads_per_op(threads_per_op)  # before the runtime starts: it keeps them
            tf.constant(0) + 0  # the first op starts the runtime, which prints more lines
    finally:
        os.dup2(saved_stderr, 2)
        os.close(saved_stderr)
        os.close(devnull)
