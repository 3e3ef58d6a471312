"""Probing one per-replica batch: the request sent to a fresh probe process and its result.

The probe process itself is actrec.train.memory.probe_process (`python -m
actrec.train.memory`); one process per probe measures each batch alone.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from actrec.config.files import recipe_to_dict
from actrec.config.recipe import Recipe
from actrec.errors import ConfigError

PROBE_STEPS = 3
"""Timed steps per probe, after one untimed step (which traces the step function)."""
PROBE_RESULT_PREFIX = "ACTREC_PROBE "
DEVICES = ("cpu", "gpu")


@dataclass(frozen=True)
class ProbeResult:
    """One probed per-replica batch.

    fits: its training step ran within the budget (CPU) / without running out of memory (GPU).
    peak_bytes: the measured peak (process RSS on CPU, allocator peak on GPU); for a probe
        stopped over budget, the peak when it was stopped (a lower bound).
    step_seconds: median time of the timed steps (None when it did not fit).
    reason: why it does not fit ("over budget", "out of memory", ...), "" when it fits.
    """

    batch: int
    fits: bool
    peak_bytes: int | None
    step_seconds: float | None
    reason: str = ""

    @property
    def clips_per_second(self) -> float | None:
        if not self.fits or not self.step_seconds:
            return None
        return self.batch / self.step_seconds

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def _probe_environment() -> dict[str, str]:
    """The probe's environment: this one without the cluster (it trains alone), with
    actrec importable and TensorFlow's start-up lines quiet."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if name != "TF_CONFIG" and not name.startswith("SLURM_")
    }
    package_root = str(Path(__file__).resolve().parents[3])  # the folder holding actrec/
    existing = environment.get("PYTHONPATH")
    environment["PYTHONPATH"] = package_root + (os.pathsep + existing if existing else "")
    environment.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return environment


def probe_batch(
    recipe: Recipe,
    num_classes: int,
    batch: int,
    *,
    budget_bytes: int | None = None,
    device: str = "cpu",
    steps: int = PROBE_STEPS,
    timeout: float | None = None,
) -> ProbeResult:
    """Run `1 + steps` training steps of `recipe`'s model at per-replica `batch` in a fresh
    process; its peak memory and median step time.

    Raises ConfigError when the probe fails for another reason than memory (its error).
    """
    if device not in DEVICES:
        raise ConfigError(f"device={device!r} is not valid; use cpu or gpu")

    request = {
        "recipe": recipe_to_dict(recipe),
        "num_classes": int(num_classes),
        "batch": int(batch),
        "steps": int(steps),
        "budget_bytes": budget_bytes,
        "device": device,
    }
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "actrec.train.memory"],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            env=_probe_environment(),
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return ProbeResult(batch, False, None, None, f"timed out after {timeout:g} s")
    for line in reversed(completed.stdout.splitlines()):
        if line.startswith(PROBE_RESULT_PREFIX):
            values = json.loads(line[len(PROBE_RESULT_PREFIX) :])
            if values.get("error"):
                raise ConfigError(f"probing a batch of {batch} failed: {values['error']}")
            return ProbeResult(**values)
    if completed.returncode < 0:  # the kernel's out-of-memory killer sends SIGKILL
        return ProbeResult(batch, False, None, None, f"killed by signal {-completed.returncode}")
    tail = (completed.stderr or completed.stdout).strip().splitlines()[-5:]
    raise ConfigError(
        f"probing a batch of {batch} failed (exit code {completed.returncode}): " + " | ".join(tail)
    )
