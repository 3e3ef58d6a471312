"""Values read from YAML or `--set` made into a field's type, or a ConfigError saying why not.

int -> float, list -> tuple, numeric text -> float (a YAML 1.1 loader reads "1e-4" as text);
null only for optional fields. A choice field (typed with a `Literal` alias of
actrec.config.recipe) takes any string here: `validate_recipe` checks it against the choices,
with a message that lists them.
"""

from __future__ import annotations

import difflib
import math
import re
import types
import typing
from typing import Any, Literal

from actrec.errors import ConfigError

# A YAML 1.1 loader reads "1e-4" as a string (it wants "1.0e-4"); float fields accept it.
_FLOAT_TEXT = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def is_choice(annotation: Any) -> bool:
    """True for a field typed with a Literal of strings alone (a choice such as Modality)."""
    return typing.get_origin(annotation) is Literal and all(
        isinstance(value, str) for value in typing.get_args(annotation)
    )


def field_types(section_type: type) -> dict[str, Any]:
    """Field name -> the type a value must have, of a config dataclass (choices: str)."""
    return {
        key: str if is_choice(annotation) else annotation
        for key, annotation in typing.get_type_hints(section_type).items()
    }


def type_name(annotation: Any) -> str:
    """How a field type is written in messages."""
    names = {
        str: "a string",
        int: "a whole number",
        float: "a number",
        bool: "true or false",
        type(None): "null",
    }
    if annotation in names:
        return names[annotation]
    origin = typing.get_origin(annotation)
    if origin is tuple:
        element = typing.get_args(annotation)[0]
        return {int: "a list of whole numbers", float: "a list of numbers"}.get(
            element, f"a list of {type_name(element)}"
        )
    if origin is Literal:
        return " or ".join(repr(value) for value in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_name(argument) for argument in typing.get_args(annotation))
    return str(annotation)


class _MismatchError(Exception):
    """A value does not have a field's type (turned into a ConfigError by the caller)."""


def _coerce(value: Any, annotation: Any) -> Any:
    """`value` as `annotation`: int -> float, list -> tuple, numeric text -> float.

    Raises _MismatchError when it cannot be."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in typing.get_args(annotation):
            return None
        for argument in typing.get_args(annotation):
            if argument is type(None):
                continue
            try:
                return _coerce(value, argument)
            except _MismatchError:
                continue
        raise _MismatchError
    if origin is Literal:
        if isinstance(value, str) and value in typing.get_args(annotation):
            return value
        raise _MismatchError
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise _MismatchError
        element = typing.get_args(annotation)[0]
        return tuple(_coerce(item, element) for item in value)
    if annotation is bool:
        if isinstance(value, bool):
            return value
        raise _MismatchError
    if annotation is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _MismatchError
    if annotation is float:
        is_number = isinstance(value, int | float) and not isinstance(value, bool)
        is_number_text = isinstance(value, str) and _FLOAT_TEXT.match(value.strip())
        if not (is_number or is_number_text):
            raise _MismatchError
        number = float(value)
        if not math.isfinite(number):
            raise _MismatchError
        return number
    if annotation is str:
        if isinstance(value, str):
            return value
        raise _MismatchError
    raise _MismatchError


def coerced_field(section: str, key: str, value: Any, annotation: Any, origin: str) -> Any:
    """`value` as `annotation` (from `field_types`), or a ConfigError naming `origin`, the
    key, the value and the type expected."""
    try:
        return _coerce(value, annotation)
    except _MismatchError:
        raise ConfigError(
            f"{origin}: {section}.{key}={value!r} has the wrong type; expected "
            f"{type_name(annotation)}"
        ) from None


def unknown_key_message(origin: str, section: str, key: str, valid: list[str]) -> str:
    """The error text for a key a section does not have, with the closest valid key."""
    close = difflib.get_close_matches(str(key), valid, n=1)
    hint = f" (did you mean {section}.{close[0]}?)" if close else ""
    return (
        f"{origin}: unknown key {section}.{key}{hint}; valid keys of '{section}': "
        f"{', '.join(valid)}"
    )
