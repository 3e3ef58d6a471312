"""What TensorFlow and Keras import at start-up for helpers actrec never calls, declined in
the processes actrec starts: the console script (actrec_cli.main.run), a batch-size probe
(`python -m actrec.train.memory`) and an export's check of its card's code
(actrec.export.fresh_process).

`import tensorflow` imports Keras, and both try optional packages when they are installed:
Keras's image-gallery plots import matplotlib.pyplot, its scikit-learn wrappers
scikit-learn, its notebook file editor IPython, its Orbax checkpoint callback and
TensorFlow's TFLite utilities (for `experimental_from_jax`) JAX. Each import sits in a
`try: ... except ImportError`. Without them a process that imports TensorFlow used 2.5 s of
CPU instead of 5.0 s (2-core AMD EPYC; docs/benchmarks.md, "The command's start"). Those
processes decline exactly those imports by those modules (a finder first on
`sys.meta_path`): the packages stay importable by everything else, so actrec's own
confusion-matrix plot (matplotlib) and metrics (scikit-learn) import them as before.
Python's import system offers no per-importer switch, hence this finder.
"""

from __future__ import annotations

import importlib.abc
import sys

DECLINED = (
    ("keras.src.visualization.", "matplotlib"),
    ("keras.src.wrappers.", "sklearn"),
    ("keras.src.saving.file_editor", "IPython"),
    ("keras.src.callbacks.orbax_checkpoint", "jax"),
    ("tensorflow.lite.python.util", "jax"),
)
"""(importing module, or the prefix of its name; top-level package it is not given)."""
_PACKAGES = frozenset(package for _, package in DECLINED)
_IMPORT_MACHINERY = ("importlib", "_frozen_importlib")


def importing_module(frame) -> str:
    """The name of the module whose code runs the import that reached `frame` (the first
    frame outside Python's import machinery)."""
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if not name.startswith(_IMPORT_MACHINERY) and name != __name__:
            return name
        frame = frame.f_back
    return ""


class OptionalImportsDeclined(importlib.abc.MetaPathFinder):
    """Answers ModuleNotFoundError for the DECLINED (importer, package) pairs and leaves
    every other import to the finders after it."""

    def find_spec(self, fullname, path=None, target=None):
        package = fullname.partition(".")[0]
        if package not in _PACKAGES:
            return None
        importer = importing_module(sys._getframe(1))
        for prefix, declined in DECLINED:
            if package == declined and importer.startswith(prefix):
                raise ModuleNotFoundError(
                    f"{fullname} is not imported by {importer} in a process actrec started",
                    name=fullname,
                )
        return None


def decline_optional_imports() -> None:
    """Put the finder first on sys.meta_path (once)."""
    if not any(isinstance(finder, OptionalImportsDeclined) for finder in sys.meta_path):
        sys.meta_path.insert(0, OptionalImportsDeclined())
