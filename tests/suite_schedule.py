"""The order and the xdist groups of the suite's tests (tests/conftest.py applies it to
every collection).

The suite runs on two pytest-xdist workers (`-n 2 --dist loadgroup` in pyproject.toml),
each with its own session and module fixtures. The synthetic-set trainings are built once
per suite run for both workers (tests/fixtures/built_once.py), and the tests that use them
come first, in two groups that start on different workers: the first group's worker trains
the TSM and flow runs while the second's trains the online TSM (and runs the tests that
need nothing else). Every other test goes with the rest of its module, so that a module's
fixtures (trainings, launches of worker processes) are built once, not on each worker; the
modules go longest first by tests/durations.json (suite_durations.py), so the long ones
start early and the short ones fill the end of the run on both workers. pytest-xdist hands
the groups out in the order of the collection (`--no-loadscope-reorder`). The
synthetic-set groups' tests are marked `recipe_scale` (pyproject.toml's markers), as the
documented roads mark themselves: `-m "not recipe_scale"` runs the rest."""

from __future__ import annotations

from pathlib import Path

import pytest
from suite_durations import ModuleDurations, module_of

SYNTHETIC_SET_FIXTURES = frozenset(
    {
        "synthetic_prepared",
        "synthetic_flow_run",
        "synthetic_tsm_run",
        "synthetic_tsm_online_run",
        "synthetic_quickstart_export",
    }
)
"""The session fixtures that train on the default synthetic set (minutes each)."""
SECOND_GROUP_FIXTURES = frozenset({"synthetic_tsm_online_run"})
"""The training the second synthetic-set group starts with (the first group starts with
the TSM and flow runs)."""


def synthetic_fixtures(item) -> frozenset:
    """The synthetic-set fixtures a test asks for."""
    return SYNTHETIC_SET_FIXTURES.intersection(getattr(item, "fixturenames", ()))


def needs_the_first_groups_runs(item) -> bool:
    """Whether a test asks for a synthetic-set run the first group trains."""
    return bool(synthetic_fixtures(item) - SECOND_GROUP_FIXTURES - {"synthetic_prepared"})


def module_group(item) -> str:
    """A test's module by file name without .py (unique across the folders of tests/:
    pytest imports test modules by their base name): its xdist group outside the
    synthetic-set groups."""
    path = getattr(item, "path", None)
    return Path(path).stem if path is not None else item.name


def schedule(items: list, durations: ModuleDurations) -> None:
    """Mark each test with its xdist group and reorder `items` in place: the two
    synthetic-set groups first, then the other modules, longest first by `durations`
    (stable: a module's tests stay together, in file order)."""
    # The second group is what needs the online TSM and none of the first group's runs, so
    # that its worker trains it while the other trains the TSM and flow runs, and then goes
    # on to other modules instead of waiting for those runs. A test that needs runs of both
    # groups (the README's commands) ends the first group: the online TSM is done by then.
    second = [
        item
        for item in items
        if synthetic_fixtures(item) & SECOND_GROUP_FIXTURES
        and not needs_the_first_groups_runs(item)
    ]
    first = [item for item in items if synthetic_fixtures(item) and item not in second]
    first.sort(key=lambda item: bool(synthetic_fixtures(item) & SECOND_GROUP_FIXTURES))
    for group, members in (("synthetic-set-1", first), ("synthetic-set-2", second)):
        for item in members:
            item.add_marker(pytest.mark.xdist_group(group))
            item.add_marker(pytest.mark.recipe_scale)
    chosen = set(first + second)
    rest = [item for item in items if item not in chosen]
    for item in rest:
        item.add_marker(pytest.mark.xdist_group(module_group(item)))
    rest.sort(key=lambda item: -durations.of(module_of(item.nodeid)))
    items[:] = first + second + rest
