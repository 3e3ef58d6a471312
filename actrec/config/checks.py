"""The checks `validate_recipe` is made of: a choice, a lower bound, and the error both raise.

Every error is a ConfigError naming `section.key`, the value received and what is allowed.
"""

from __future__ import annotations

from typing import Any

from actrec.errors import ConfigError


def invalid(section: str, key: str, value: Any, allowed: str) -> ConfigError:
    """The ConfigError for `section.key=value`, saying what is `allowed`."""
    return ConfigError(f"{section}.{key}={value!r} is not valid; {allowed}")


def require_choice(section: str, config: Any, key: str, choices: tuple[str, ...]) -> None:
    """ConfigError unless `config.key` is one of `choices` (a tuple of actrec.config.choices)."""
    value = getattr(config, key)
    if value not in choices:
        raise invalid(section, key, value, f"choose one of: {', '.join(choices)}")


def require_at_least(section: str, config: Any, key: str, minimum: float, optional=False):
    """ConfigError unless `config.key` >= `minimum` (or None, when `optional`)."""
    value = getattr(config, key)
    if optional and value is None:
        return
    if value is None or value < minimum:
        allowed = f"use a value >= {minimum}" + (" or null" if optional else "")
        raise invalid(section, key, value, allowed)
