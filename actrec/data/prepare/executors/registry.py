"""The preparation-executor registry: the only list of executors.

Each executor is one module of this package that defines `EXECUTOR`, an ExecutorKind: its
name, a one-line summary, its own options and `open`, which gives an Executor for a
preparation. `actrec prepare --executor`'s choices and options, and `prepare_dataset`'s
default, read this registry; adding an executor is one module here, its test and its row in
docs/cluster.md (docs/extending.md). Every executor hands the results back in task order
through actrec.data.prepare.in_flight, so the shards are the same bytes whichever encoded
them.

Importing an executor module imports neither OpenCV nor Ray (they are imported when it
encodes), so the CLI reads the registry at once.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from actrec.data.prepare import executors
from actrec.errors import ConfigError

if TYPE_CHECKING:
    from actrec.data.prepare.encode_video import PrepareSettings, VideoResult, VideoTask

DEFAULT_EXECUTOR = "local"


class Executor(Protocol):
    """Where videos are encoded. Either executor hands the results back in task order, so
    the shards written from them are the same bytes."""

    def check_nodes(self, paths: Sequence[str]) -> None:
        """Raise ClusterError when a machine that will encode cannot read `paths`."""

    def encode_in_order(
        self, tasks: Iterable[VideoTask], settings: PrepareSettings
    ) -> Iterator[VideoResult]:
        """Yield encode_video(task) for every task, in task order (in_flight.results_in_order,
        which cancels the rest when a task's error stops it)."""


@dataclass(frozen=True)
class ExecutorOption:
    """An option of one executor: `--NAME VALUE` on `actrec prepare` (a string; None when
    not given), passed to its `open` by name."""

    name: str
    help: str


@dataclass(frozen=True)
class ExecutorKind:
    """One registered executor.

    open(workers, **options) -> a context manager giving the Executor of one preparation
    (`workers`: the CPUs it may use on this machine; options: its ExecutorOptions by name,
    None when not given), cleaned up on exit; its return is annotated Iterator[TheExecutor]
    (tests/data/test_prepare_executors.py reads the executor's class from it).
    """

    name: str
    summary: str
    open: Callable[..., AbstractContextManager[Executor]]
    options: tuple[ExecutorOption, ...] = ()


def executor_names() -> tuple[str, ...]:
    """Every registered executor's name, the default first, the others alphabetically."""
    names = sorted(
        module.name
        for module in pkgutil.iter_modules(executors.__path__)
        if module.name != "registry"
    )
    return (DEFAULT_EXECUTOR, *[name for name in names if name != DEFAULT_EXECUTOR])


def executor_kind(name: str) -> ExecutorKind:
    """The registered executor `name`; ConfigError naming the choices otherwise."""
    if not isinstance(name, str) or name not in executor_names():
        raise ConfigError(
            f"executor {name!r} is not valid; choose one of: {', '.join(executor_names())}"
        )
    return importlib.import_module(f"actrec.data.prepare.executors.{name}").EXECUTOR


def all_options() -> tuple[tuple[str, ExecutorOption], ...]:
    """(executor name, ExecutorOption) of every registered executor's options."""
    return tuple(
        (name, option) for name in executor_names() for option in executor_kind(name).options
    )


def checked_options(name: str, options: dict[str, str | None]) -> dict[str, str]:
    """`options` given (None values dropped) for executor `name`; ConfigError naming the
    executor that takes an option `name` does not."""
    kind = executor_kind(name)
    given = {key: value for key, value in options.items() if value is not None}
    own = {option.name for option in kind.options}
    for key in given:
        if key not in own:
            takers = [other for other, option in all_options() if option.name == key]
            raise ConfigError(
                f"--{key} is an option of --executor {' and '.join(takers) or 'none'}; "
                f"--executor {name} does not take it: leave --{key} out"
            )
    return given


def open_executor(name: str, workers: int, options: dict[str, str | None] | None = None):
    """The context manager of executor `name` with `workers` CPUs and its `options` (by
    name; None values are not given), checked by checked_options."""
    return executor_kind(name).open(workers, **checked_options(name, options or {}))
