"""Fields that carry their own check: a recipe value's one validation lives beside its field.

    num_segments: int = at_least(3, 1)
    dropout: float = checked(0.8, lambda rate: 0 <= rate < 1, "use a rate in [0, 1)")

`validate_recipe` runs every field's check (actrec.config.validate.validate_fields) and
raises "section.key=value is not valid; <allowed>"; checks of several fields together stay
in actrec.config.validate. None, for an optional field, and "auto" pass (their meaning is
checked where they are resolved).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Any

TEST = "test"
ALLOWED = "allowed"
MAX_THREADS_PER_OP = 256
"""runtime.threads_per_op's largest value (TensorFlow makes the threads it is asked for)."""


def checked(default: Any, test: Callable[[Any], bool], allowed: str) -> Any:
    """A dataclass field whose values `test` accepts; `allowed` says which, in the error."""
    return field(default=default, metadata={TEST: test, ALLOWED: allowed})


def at_least(default: Any, minimum: float, optional: bool = False) -> Any:
    """A field whose value must be >= `minimum` (or null, when `optional`)."""
    allowed = f"use a value >= {minimum}" + (" or null" if optional else "")
    return checked(default, lambda value: value >= minimum, allowed)


def between(default: Any, low: float, high: float, optional: bool = False) -> Any:
    """A field whose value must lie in [low, high] (or be null, when `optional`)."""
    allowed = f"use {low} to {high}" + (" or null" if optional else "")
    return checked(default, lambda value: low <= value <= high, allowed)


def field_problem(metadata: Any, value: Any) -> str | None:
    """What is allowed, when `value` fails the check in a field's `metadata`; else None."""
    test = metadata.get(TEST)
    if test is None or value is None or value == "auto" or test(value):
        return None
    return metadata[ALLOWED]
