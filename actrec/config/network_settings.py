"""A clip network's size with some of its fields set otherwise: a recipe's
`model.network` ("layer_norm_epsilon=1e-12", "heads=4"), what a converted published file
differs in from the registered size it is named by (a Hugging Face config's epsilons, a
size the registry does not list). Standard library only: the recipe's checks use it before
TensorFlow, the factory to build the network.
"""

from __future__ import annotations

import dataclasses

from actrec.errors import ConfigError

FIXED_FIELDS = ("name",)


def parsed_network_settings(spec, settings: tuple[str, ...]) -> dict[str, object]:
    """{field: value} of `settings` ("field=value" each) for the size `spec` (a dataclass),
    each value of its field's type; ConfigError naming the setting otherwise."""
    if not settings:
        return {}
    if not dataclasses.is_dataclass(spec):
        raise ConfigError(f"model.network: {spec.name} takes no settings of its shape")
    types = {item.name: item.type for item in dataclasses.fields(spec)}
    names = [name for name in types if name not in FIXED_FIELDS]
    parsed: dict[str, object] = {}
    for setting in settings:
        name, equals, text = str(setting).partition("=")
        name, text = name.strip(), text.strip()
        if not equals or name not in names:
            raise ConfigError(
                f"model.network={setting!r} is not valid; give FIELD=VALUE with a field of "
                f"{spec.name}: {', '.join(names)}"
            )
        parsed[name] = _value(name, text, str(types[name]), setting)
    return parsed


def _value(name: str, text: str, annotation: str, setting: str) -> object:
    try:
        if annotation == "bool":
            if text.lower() not in ("true", "false"):
                raise ValueError(text)
            return text.lower() == "true"
        if annotation == "int":
            return int(text)
        if annotation == "float":
            return float(text)
        if annotation == "str":
            return text
    except ValueError:
        raise ConfigError(
            f"model.network={setting!r} is not valid; {name} is a {annotation}"
        ) from None
    raise ConfigError(f"model.network={setting!r} is not valid; {name} cannot be set")


def network_with_settings(spec, settings: tuple[str, ...]):
    """`spec` with the fields `settings` give set (the same object without any);
    ConfigError naming model.network when a setting or the shape it makes is not valid."""
    parsed = parsed_network_settings(spec, settings)
    if not parsed:
        return spec
    try:
        return dataclasses.replace(spec, **parsed)
    except ValueError as error:
        raise ConfigError(f"model.network={list(settings)} is not valid; {error}") from None
