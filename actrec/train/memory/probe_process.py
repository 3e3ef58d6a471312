"""The probe process (`python -m actrec.train.memory`): a JSON request on stdin, one result
line on stdout; a watchdog thread stops it as soon as its peak passes the CPU budget."""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import sys
import time

from actrec.cluster.strategy import build_strategy
from actrec.config.files import recipe_from_dict
from actrec.config.recipe import resolved_input_size
from actrec.errors import ActrecError, ConfigError
from actrec.models.segment_model import channels_for
from actrec.train.loop.trainer import build_trainer
from actrec.train.memory.probe import PROBE_RESULT_PREFIX
from actrec.train.memory.units import KIB, MIB

WATCHDOG_INTERVAL_SECONDS = 0.01


def _peak_rss_bytes() -> int:
    """This process's own peak resident set size in bytes.

    Linux: VmHWM of /proc/self/status. Not `ru_maxrss`: after fork + exec, Linux carries
    the forked copy's peak (the PARENT's resident size at the fork) into the child's
    `ru_maxrss`, so a probe started from a training process that already holds gigabytes
    would report them as its own. Elsewhere: `ru_maxrss` (bytes on macOS, KiB otherwise).
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * KIB
    except (OSError, ValueError, IndexError):
        pass
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * KIB


def _emit(values: dict) -> None:
    sys.stdout.write(PROBE_RESULT_PREFIX + json.dumps(values) + "\n")
    sys.stdout.flush()


def _start_watchdog(batch: int, budget: int) -> None:
    """Stop this probe as soon as its peak RSS passes `budget` (reported: over budget)."""
    import threading

    def watch():
        while True:
            peak = _peak_rss_bytes()
            if peak > budget:
                _emit(
                    {
                        "batch": batch,
                        "fits": False,
                        "peak_bytes": peak,
                        "step_seconds": None,
                        "reason": "over budget",
                    }
                )
                os._exit(0)
            time.sleep(WATCHDOG_INTERVAL_SECONDS)

    threading.Thread(target=watch, daemon=True, name="memory-watchdog").start()


def probe_main() -> None:
    """The probe process: a JSON request on stdin, one result line on stdout."""
    request = json.loads(sys.stdin.read())
    batch, device = int(request["batch"]), request["device"]
    budget = request.get("budget_bytes")
    if device == "cpu" and budget is not None:
        _start_watchdog(batch, int(budget))
    try:
        _emit(_run_probe(request))
    except ActrecError as error:
        _emit({"error": str(error)})


def _run_probe(request: dict) -> dict:
    import numpy as np
    import tensorflow as tf

    batch, device = int(request["batch"]), request["device"]
    budget = request.get("budget_bytes")
    if device == "gpu":
        gpus = tf.config.list_physical_devices("GPU")
        if not gpus:
            raise ConfigError("a GPU probe was requested but TensorFlow sees no GPU")
        tf.config.set_visible_devices(gpus[0], "GPU")
        if budget is not None:
            tf.config.set_logical_device_configuration(
                gpus[0], [tf.config.LogicalDeviceConfiguration(memory_limit=max(1, budget // MIB))]
            )

    recipe = recipe_from_dict(request["recipe"])
    # Random weights: loading the ImageNet file changes no memory and may need a download.
    recipe = dataclasses.replace(recipe, model=dataclasses.replace(recipe.model, weights="none"))
    num_classes = int(request["num_classes"])
    data = recipe.data
    side = resolved_input_size(recipe.model, data)
    channels = channels_for(data.modality, data.new_length)
    shape = (batch, data.num_segments, side, side, channels)  # [B, T, H, W, C]
    rng = np.random.default_rng(0)
    clips = rng.uniform(0, 255, size=shape).astype("float32")
    labels = rng.integers(0, num_classes, size=shape[0]).astype("int32")
    times = []
    try:  # building the model can run out of GPU memory too
        trainer = build_trainer(build_strategy("one-device", environ={}), recipe, num_classes)
        batches = iter(
            trainer.distribute(
                lambda context: tf.data.Dataset.from_tensors((clips, labels)).repeat()
            )
        )
        for _ in range(1 + int(request["steps"])):
            started = time.perf_counter()
            trainer.train_step(next(batches), recipe.train.lr)
            times.append(time.perf_counter() - started)
    except tf.errors.ResourceExhaustedError:
        peak = tf.config.experimental.get_memory_info("GPU:0")["peak"] if device == "gpu" else None
        return {
            "batch": batch,
            "fits": False,
            "peak_bytes": peak,
            "step_seconds": None,
            "reason": "out of memory",
        }
    if device == "gpu":
        peak = int(tf.config.experimental.get_memory_info("GPU:0")["peak"])
    else:
        peak = _peak_rss_bytes()
    fits = budget is None or peak <= int(budget)
    return {
        "batch": batch,
        "fits": fits,
        "peak_bytes": peak,
        "step_seconds": statistics.median(times[1:]) if len(times) > 1 else times[0],
        "reason": "" if fits else "over budget",
    }
