"""The Model Garden's MoViNet as a reference, written once by tf-models-official itself and
kept as a small asset (tests/assets/movinet-reference, about 1 MB).

tf-models-official 2.20.0 needs TensorFlow 2.20 and tf_keras 2.20.1 (actrec runs on
TensorFlow 2.21 and Keras 3), and its models are tf_keras objects, never to be mixed with
Keras 3 ones in one process; making its environment and running it costs about 6 minutes
(2 min of pip, 3.7 of the writer, 3.3 GB), which a fresh CI machine would pay on every run.
So the writer (tests/backbones/movinet_reference_writer.py) runs there once and keeps what
the suite needs: every variable's value comes from one seeded rule
(tests/movinet_reference_values.py, applied by the writer before the Model
Garden writes its checkpoints), and the asset keeps, for each file the Model Garden wrote,
every key's variable name, shape and digest and its object graph, plus the Model Garden's
outputs on two fixed clips. `written_references` writes the same checkpoints again (each
tensor checked against the Model Garden's digest, so they hold the very values it wrote)
in a few seconds, with TensorFlow's own SaveV2.

`python tests/movinet_reference.py` writes the asset anew: it makes the reference
environment (`$ACTREC_MOVINET_REFERENCE_ENV`, else
`$XDG_CACHE_HOME/actrec/reference-envs/tf-models-official-2.20.0`, ~/.cache by default)
where it is missing and runs the writer there. The suite refuses an asset that the current
writer did not write (tests/backbones/test_movinet_reference.py).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from movinet_reference_values import PIN, drawn_value, tensor_digest

ASSET = Path(__file__).parent / "assets" / "movinet-reference"
WRITER = Path(__file__).parent / "backbones" / "movinet_reference_writer.py"
READY = ".actrec-ready"
GRAPH = "_CHECKPOINTABLE_OBJECT_GRAPH"


def asset_manifest(asset: Path = ASSET) -> dict:
    """The asset's cases.json.gz: {"writer": digest, "pin", "cases": name -> case}."""
    with gzip.open(asset / "cases.json.gz", "rt") as file:
        return json.load(file)


def write_checkpoint(prefix: Path, record: dict, graph: bytes, seed: int) -> None:
    """The checkpoint the Model Garden wrote at `prefix`, written again from its record:
    each float32 tensor drawn by the rule and checked against the Model Garden's digest."""
    import tensorflow as tf  # the suite's TensorFlow: its own checkpoint writer

    names, tensors = [GRAPH], [tf.constant(graph)]
    for key, (name, shape, digest) in record["tensors"].items():
        value = drawn_value(seed, name, shape)
        if tensor_digest(value) != digest:
            raise AssertionError(
                f"{prefix}: {key} drawn again is not the Model Garden's tensor (digest "
                f"{tensor_digest(value)} != {digest}): numpy's draw changed? rewrite the "
                "asset with `python tests/movinet_reference.py`"
            )
        names.append(key)
        tensors.append(tf.constant(value))
    for key, (value, dtype) in record["others"].items():
        names.append(key)
        tensors.append(tf.constant(value, dtype=dtype))
    prefix.parent.mkdir(parents=True, exist_ok=True)
    tf.raw_ops.SaveV2(
        prefix=str(prefix),
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=tensors,
    )


def written_references(
    folder: Path, asset: Path = ASSET, names: tuple[str, ...] | None = None
) -> tuple[Path, dict]:
    """(folder, name -> case) with the Model Garden's files written again under `folder`:
    NAME/outputs.npz (clips, logits, stream_logits, sampled endpoints) and each case's
    checkpoints; a case's "files" maps a kind ("model", "model_backbone", "backbone",
    "savedmodel": a SavedModel's variables/ folder) to its path under `folder`. `names`:
    only those cases (all by default)."""
    manifest = asset_manifest(asset)
    outputs = np.load(asset / "outputs.npz")
    graphs = np.load(asset / "object_graphs.npz")
    cases = {}
    for name, case in manifest["cases"].items():
        if names is not None and name not in names:
            continue
        (folder / name).mkdir(parents=True, exist_ok=True)
        prefix = f"{name}/"
        arrays = {
            key[len(prefix) :]: outputs[key] for key in outputs.files if key.startswith(prefix)
        }
        np.savez(folder / name / "outputs.npz", clips=outputs["clips"], **arrays)
        files = {}
        for kind, record in case["files"].items():
            path = folder / record["path"]
            graph = graphs[f"{name}/{kind}"].tobytes()
            write_checkpoint(path, record, graph, case["seed"])
            files[kind] = str((path.parent if kind == "savedmodel" else path).relative_to(folder))
        cases[name] = {**case, "files": files}
    return folder, cases


def reference_file(folder: Path, case: dict, kind: str) -> Path:
    """A case's file of `kind` ("model", "model_backbone", "backbone", "savedmodel")."""
    return folder / case["files"][kind]


def environment_folder() -> Path:
    """Where the reference environment is (or will be) made."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    default = base / "actrec" / "reference-envs" / PIN.replace("==", "-")
    return Path(os.environ.get("ACTREC_MOVINET_REFERENCE_ENV") or default)


def reference_environment() -> Path:
    """The reference environment's folder, made with venv and pip if missing."""
    env = environment_folder()
    if (env / READY).is_file() and (env / "bin" / "python").is_file():
        return env
    env.parent.mkdir(parents=True, exist_ok=True)
    if not (env / "bin" / "python").is_file():
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    subprocess.run([str(env / "bin" / "python"), "-m", "pip", "install", PIN], check=True)
    (env / READY).write_text(PIN + "\n")
    return env


def write_asset(asset: Path = ASSET) -> None:
    """Runs the writer in the reference environment into `asset` (replaced when done)."""
    env = reference_environment()
    partial = asset.with_name(asset.name + ".partial")
    subprocess.run(
        [str(env / "bin" / "python"), str(WRITER), str(partial)],
        check=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(Path(__file__).parent)},
    )
    for old in asset.glob("*") if asset.is_dir() else ():
        old.unlink()
    if asset.is_dir():
        asset.rmdir()
    partial.replace(asset)


if __name__ == "__main__":
    write_asset()
    print(f"wrote {ASSET}")
