"""The one place where an error of the runtime that reads a model becomes one line.

TensorFlow, LiteRT and ONNX Runtime raise what they like on a damaged or edited model file:
OpError and ValueError, but also AssertionError (a SavedModel whose variables/ belong to
another model: "Found 525 Python objects that were not bound ..."), IndexError (an object
graph child id past its end), RuntimeError, their own exception types. `reading_model`
turns any of them, raised while a model folder is read and loaded, into a ConfigError that
names the folder and the fix; actrec's own errors (ActrecError) pass unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from actrec.errors import ActrecError, ConfigError

DETAIL_LENGTH = 200
"""The most characters of the runtime's own message the line quotes."""


def error_detail(error: BaseException) -> str:
    """`Type: first line of the message`, cut to DETAIL_LENGTH characters."""
    lines = str(error).strip().splitlines()
    detail = lines[0] if lines else ""
    if len(detail) > DETAIL_LENGTH:
        detail = detail[: DETAIL_LENGTH - 3] + "..."
    return f"{type(error).__name__}: {detail}" if detail else type(error).__name__


@contextmanager
def reading_model(model_dir: Path | str, fix: str = "export the model again") -> Iterator[None]:
    """Run the body (reading and loading the model of `model_dir`); any error but actrec's
    own becomes ConfigError "MODEL_DIR: cannot load its model (Type: message); FIX"."""
    try:
        yield
    except ActrecError:
        raise
    except Exception as error:  # every runtime raises its own types; see the module
        raise ConfigError(
            f"{model_dir}: cannot load its model ({error_detail(error)}); the folder is "
            f"damaged or not what `actrec export` wrote: {fix}"
        ) from None
