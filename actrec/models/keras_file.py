"""A `.keras` file of an actrec model, loaded in any Python process.

Keras finds a custom layer's class only if the module that registers it
(`@keras.saving.register_keras_serializable(package="actrec")`) was imported before the
load, and a fresh process has imported none of them. This module imports every module
that registers one (REGISTERING_MODULES; tests/models/test_keras_file.py fails when a new
one is missing), so `load_segment_model` loads any model actrec writes wherever it runs.

Loading stays in Keras's safe mode (no lambda or arbitrary function is deserialised); the
Keras floor in pyproject.toml excludes the releases with known safe-mode bypasses, and only
the `.keras` archive format is read (Keras ignores safe_mode for legacy `.h5` files).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import keras

from actrec.backbones import fused_batch_norm
from actrec.backbones.registry import keras_layer_modules
from actrec.errors import ConfigError
from actrec.models import (
    fusion,
    preprocessing,
    segment_model,
    streaming,
    temporal_shift,
)

REGISTERING_MODULES = (
    fused_batch_norm,
    fusion,
    preprocessing,
    segment_model,
    streaming,
    temporal_shift,
    *keras_layer_modules(),
)
"""Every module of actrec that registers a Keras class (imported above for that; a backbone
family's own layers through the registry)."""

KERAS_SUFFIX = ".keras"


def load_segment_model(path: Path | str) -> keras.Model:
    """The model saved at `path` (a `.keras` archive written by actrec: a segment model or
    a two-stream model), with every actrec layer registered and Keras's safe mode on.
    ConfigError naming the file for anything else (missing, another format, damaged)."""
    path = Path(path)
    if path.suffix != KERAS_SUFFIX:
        raise ConfigError(
            f"{path} is not a {KERAS_SUFFIX} archive: actrec loads Keras models only in that "
            "format (Keras does not apply its safe mode to legacy .h5 files); export the run "
            "again with `actrec export RUN --format keras`"
        )
    if not path.is_file():
        raise ConfigError(f"{path} does not exist; give the model.keras of a Keras export")
    if not zipfile.is_zipfile(path):
        raise ConfigError(
            f"{path} is not a Keras archive (not a zip file: damaged or cut short); export "
            "the model again"
        )
    try:
        return keras.saving.load_model(str(path), safe_mode=True)
    except (OSError, ValueError, TypeError, KeyError, zipfile.BadZipFile) as error:
        detail = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise ConfigError(
            f"{path} cannot be loaded as an actrec Keras model ({type(error).__name__}: "
            f"{detail[:300]}); export the model again with this version of actrec"
        ) from None
