"""The Model Garden's MoViNet as a reference, in an environment of its own.

tf-models-official 2.20.0 needs TensorFlow 2.20 and tf_keras 2.20.1 (actrec runs on
TensorFlow 2.21 and Keras 3), and its models are tf_keras objects, never to be mixed with
Keras 3 ones in one process: so the reference is a virtual environment of its own, made
once and kept in a cache folder named by the pin (`$ACTREC_MOVINET_REFERENCE_ENV`, else
`$XDG_CACHE_HOME/actrec/reference-envs/tf-models-official-2.20.0`, ~/.cache by default;
made with `python -m venv` and pip, about 3.3 GB and a few minutes the first time, nothing
after), and the references it writes (tests/backbones/movinet_reference_writer.py: the
checkpoints, SavedModel and outputs on fixed clips) are kept beside it, named by the
writer's digest, so a later run of the suite reads them at once. The tests never skip: a
missing environment is made.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

PIN = "tf-models-official==2.20.0"
WRITER = Path(__file__).parent / "backbones" / "movinet_reference_writer.py"
READY = ".actrec-ready"


def cache_root() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "actrec" / "reference-envs"


FRESH_BUILD_SECONDS = 350.0
"""What making the environment and writing its references takes where neither is cached
(a fresh CI machine): 2 min of pip and 3.7 min of the writer on a 2-core AMD EPYC with
AVX-512 (2026-12-02). tests/suite_schedule.py adds it to the module's measured time then, so
that the module starts first instead of ending the run."""


def environment_folder() -> Path:
    """Where the reference environment is (or will be) made."""
    return Path(
        os.environ.get("ACTREC_MOVINET_REFERENCE_ENV") or cache_root() / PIN.replace("==", "-")
    )


def references_folder() -> Path:
    """Where the current writer's references are (or will be) written: named by the
    writer's digest."""
    digest = hashlib.sha256(WRITER.read_bytes() + PIN.encode()).hexdigest()[:16]
    return environment_folder().parent / f"movinet-references-{digest}"


def references_are_cached() -> bool:
    """Whether the environment and the current writer's references are there (nothing to
    make: the tests read them at once)."""
    env = environment_folder()
    return (env / READY).is_file() and (references_folder() / "cases.json").is_file()


def reference_environment() -> Path:
    """The reference environment's folder (made if missing, under a file lock so that
    parallel test processes make it once)."""
    import fcntl

    env = environment_folder()
    env.parent.mkdir(parents=True, exist_ok=True)
    with open(env.parent / f"{env.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (env / READY).is_file() and (env / "bin" / "python").is_file():
            return env
        if not (env / "bin" / "python").is_file():
            subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
        subprocess.run(
            [str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", PIN],
            check=True,
            timeout=3600,
        )
        (env / READY).write_text(PIN + "\n")
    return env


def written_references() -> tuple[Path, dict]:
    """(the folder of the reference files, cases.json read): written by the reference
    environment once per version of the writer, then read from the cache."""
    import fcntl

    env = reference_environment()
    folder = references_folder()
    with open(folder.with_name(folder.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "cases.json").is_file():
            partial = folder.with_name(folder.name + ".partial")
            shutil.rmtree(partial, ignore_errors=True)
            finished = subprocess.run(
                [str(env / "bin" / "python"), str(WRITER), str(partial)],
                capture_output=True, text=True, timeout=3600,
                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": ""},
            )  # fmt: skip
            if finished.returncode != 0:
                raise RuntimeError(
                    f"the MoViNet reference writer failed:\n{finished.stderr[-4000:]}"
                )
            partial.replace(folder)
    return folder, json.loads((folder / "cases.json").read_text())


def reference_file(folder: Path, case: dict, kind: str) -> Path:
    """A case's file of `kind` ("model", "model_backbone", "backbone", "savedmodel")."""
    return folder / case["files"][kind]
