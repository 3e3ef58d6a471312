"""actrec.models.keras_file: a .keras file of an actrec model loads in a new Python process
(every actrec layer registered: tests/export/test_model_cards.py runs the exports' cards
there), in Keras's safe mode, and anything else is refused by name."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import keras
import pytest

from actrec.errors import ConfigError
from actrec.models.keras_file import REGISTERING_MODULES, load_segment_model

REPOSITORY = Path(__file__).resolve().parents[2]
REGISTERS = re.compile(r"@keras\.saving\.register_keras_serializable\(")


def test_every_module_that_registers_a_keras_class_is_imported_by_the_loader():
    registering = {
        ".".join(path.relative_to(REPOSITORY).with_suffix("").parts)
        for path in (REPOSITORY / "actrec").rglob("*.py")
        if REGISTERS.search(path.read_text(encoding="utf-8")) and path.name != "keras_file.py"
    }
    assert registering == {module.__name__ for module in REGISTERING_MODULES}


def _with_lambda_layer(path: Path, source: Path) -> None:
    """A copy of `source` whose config.json holds a Lambda layer with Python bytecode (what
    safe mode refuses)."""
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(path, "w") as copy:
        for item in original.infolist():
            data = original.read(item.filename)
            if item.filename == "config.json":
                config = json.loads(data)
                layer = {
                    "module": "keras.layers",
                    "class_name": "Lambda",
                    "config": {
                        "name": "payload",
                        "function": {
                            "class_name": "__lambda__",
                            "config": {"code": "4wEAAAAAAAAA", "defaults": None, "closure": None},
                        },
                    },
                    "registered_name": None,
                    "name": "payload",
                    "inbound_nodes": [],
                }
                config["config"]["layers"].append(layer)
                data = json.dumps(config).encode()
            copy.writestr(item, data)


def test_what_is_not_an_actrec_keras_archive_is_refused_by_name(tmp_path):
    inputs = keras.Input((3,))
    keras.Model(inputs, keras.layers.Dense(2, name="dense")(inputs)).save(tmp_path / "m.keras")
    (tmp_path / "model.h5").write_bytes(b"\x89HDF\r\n")
    with pytest.raises(ConfigError, match=r"model\.h5 is not a \.keras archive"):
        load_segment_model(tmp_path / "model.h5")
    with pytest.raises(ConfigError, match=r"absent\.keras does not exist"):
        load_segment_model(tmp_path / "absent.keras")
    cut = tmp_path / "cut.keras"
    cut.write_bytes((tmp_path / "m.keras").read_bytes()[:200])
    with pytest.raises(ConfigError, match=r"cut\.keras is not a Keras archive"):
        load_segment_model(cut)
    hostile = tmp_path / "hostile.keras"
    _with_lambda_layer(hostile, tmp_path / "m.keras")
    with pytest.raises(ConfigError, match=r"hostile\.keras cannot be loaded.*safe_mode"):
        load_segment_model(hostile)
