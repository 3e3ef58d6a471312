"""The error every check raises, and the one check of a choice.

Every error is a ConfigError naming the value (`section.key` in a recipe, or an argument's
name), the value received and what is allowed. A choice is checked by `require_choice`
wherever it is checked: the recipe's fields (actrec.config.validate) and the arguments of
the library's functions that take a choice outside a recipe (actrec.cluster.strategy).
"""

from __future__ import annotations

from typing import Any

from actrec.errors import ConfigError


def invalid(section: str, key: str, value: Any, allowed: str) -> ConfigError:
    """The ConfigError for `section.key=value`, saying what is `allowed`."""
    return invalid_value(f"{section}.{key}", value, allowed)


def invalid_value(name: str, value: Any, allowed: str) -> ConfigError:
    """The ConfigError for `name=value`, saying what is `allowed`."""
    return ConfigError(f"{name}={value!r} is not valid; {allowed}")


def require_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    """ConfigError unless `value` is one of `choices` (a tuple of actrec.config.choices);
    `name` is what the error calls it ("train.optimizer", "strategy")."""
    if value not in choices:
        raise invalid_value(name, value, f"choose one of: {', '.join(choices)}")
