"""The device budget: the memory a probed batch may use, and the device it is probed on."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from actrec.train.memory.units import KIB

DEFAULT_CPU_BUDGET_FRACTION = 0.8
"""Default CPU budget: this fraction of the memory available when the run starts."""


def available_memory_bytes() -> int | None:
    """Memory this process could still use: MemAvailable, or less under a cgroup limit."""
    available = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                available = int(line.split()[1]) * KIB
    except (OSError, ValueError, IndexError):
        pass
    try:
        limit_text = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit_text != "max":
            used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
            left = max(0, int(limit_text) - used)
            available = left if available is None else min(available, left)
    except (OSError, ValueError):
        pass
    if available is None:
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return None
    return available


def accelerator() -> str:
    """ "gpu" when TensorFlow sees a GPU, else "cpu" (does not start TensorFlow's runtime)."""
    import tensorflow as tf

    return "gpu" if tf.config.list_physical_devices("GPU") else "cpu"


def default_memory_budget(device: str) -> int | None:
    """CPU: DEFAULT_CPU_BUDGET_FRACTION of the available memory. GPU: None (the device's
    own memory: a batch fits when it runs without an out-of-memory error)."""
    if device == "gpu":
        return None
    available = available_memory_bytes()
    return None if available is None else int(available * DEFAULT_CPU_BUDGET_FRACTION)


def prepare_devices_for_probing() -> None:
    """Turn on GPU memory growth in this process, so that it does not hold the GPUs while
    probe processes measure them (call before any TensorFlow op or strategy)."""
    import tensorflow as tf

    for gpu in tf.config.list_physical_devices("GPU"):
        with contextlib.suppress(RuntimeError):  # the runtime has started: leave it
            tf.config.experimental.set_memory_growth(gpu, True)
