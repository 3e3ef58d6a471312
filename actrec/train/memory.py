"""Choosing the per-replica batch by probing memory and throughput (DESIGN.md §5, "Memory").

Guo et al. (PPoPP 2019) show that memory limits a deep network's depth and batch, and that
the batch and learning rate should be chosen, after memory-saving measures such as
rematerialisation (`model.remat`, actrec.models.remat), from a performance model instead of
by trial and error. `train.batch_size: auto` (`actrec train --batch-size auto`) does that
when a run starts:

1. Probe. Each candidate per-replica batch b runs in a FRESH Python process
   (`python -m actrec.train.memory`, fed a JSON request) that builds the recipe's model and
   optimizer exactly as training does (random weights: the ImageNet file changes no
   memory) and runs 1 + `steps` training steps on a synthetic batch of b clips:
   - CPU: the memory is the probe process's peak resident set size (VmHWM on Linux; it
     counts TensorFlow itself, the weights, the optimizer state, the traced graph and the
     activations: what the kernel's out-of-memory killer sees). The peak never goes down,
     and an allocator keeps freed memory for reuse, so probes in one process would see each
     other's peaks and leftovers: one process per probe measures each batch alone, and
     nothing leaks from one probe into the next. (Not `ru_maxrss`: Linux carries the
     parent's resident size at fork into an exec'd child's `ru_maxrss`.) A watchdog thread
     stops a probe as soon as its peak passes the budget.
   - GPU: the probe process limits its first GPU to the budget (a logical device with
     `memory_limit`; no limit when no budget is given) and an out-of-memory error
     (`tf.errors.ResourceExhaustedError`) means "does not fit"; the peak is TensorFlow's
     allocator peak (`tf.config.experimental.get_memory_info`). The training process turns
     on memory growth before it creates its strategy so that it does not hold the GPU
     while the probes run.
   Candidates are b = 1, 2, 4, ... up to a cap (the share of train.max_batch_size, a numeric
   train.max_per_replica_batch, the training videos per replica, `MAX_PROBED_BATCH`),
   stopping at the first that does not fit, then bisection between the largest batch that
   fits and the smallest that does not, to within an eighth.
2. Model. The step times t(b) (median of the timed steps) of the batches that fit are fitted
   with t(b) = a + c b (Theil-Sen: the median of the pairwise slopes, so that one batch
   slowed down by memory pressure does not bend the line): a is the per-step overhead
   (kernel launches, the optimizer update, the gradient all-reduce), c the time per clip.
   A batch's throughput is b / max(measured t(b), modelled t(b)): the model smooths timing
   noise, the measurement exposes a batch that runs slower than the model predicts (memory
   pressure near the limit, slower convolution algorithms). The chosen per-replica batch is
   the LARGEST batch within `THROUGHPUT_TOLERANCE` of the best throughput (fewer
   accumulation steps, more room for the adaptive schedule). A chosen batch whose epochs
   the schedule cannot split (actrec.train.schedule.micro_batching) gives way to the next.
3. Recipe. batch_size=auto: the starting global batch is b times the replicas,
   max_per_replica_batch becomes b (a growing schedule reaches its larger batches by
   gradient accumulation), and the learning rate follows train.lr_coupling from
   train.lr_reference_batch. max_per_replica_batch=auto: the schedule stays, b is the
   micro-batch limit above which accumulation makes up a replica's share.
   `BatchDecision.apply` writes the numbers into the recipe; the run directory's
   recipe.yaml holds them, so a resumed run trains with the same batch without probing.

Multi-worker: only the chief probes (before the workers build their models); the numbers
reach every worker through one all-reduce (actrec.train.run), so all workers agree. The
chief's machine stands for all: the workers are assumed to have the same accelerators.

Limits of the measurement: the probe feeds a batch held in memory, so the input pipeline's
buffers (shuffle_buffer whole videos, prefetching) are not in the CPU peak; the default CPU
budget (`DEFAULT_CPU_BUDGET_FRACTION` of the memory available) leaves room for them. With
several workers on one machine give each a share with --memory-budget.

Host-memory offload: TensorFlow 2.21 has no general mechanism to move activations kept for
the backward pass to host memory. `tf.while_loop(swap_memory=True)` swaps only a loop's
per-iteration tensors between GPU and host (the accumulation loop in
actrec.train.loop would swap micro-batch gradients, which are needed at once, not
activations), and on a CPU-only machine activations already are in host memory: there is
nothing to offload. What actrec does instead: rematerialisation (less to keep), gradient
accumulation (a smaller micro-batch) and GPU memory growth while probing.

Nothing here imports TensorFlow at module level.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from actrec.config import AUTO, Recipe
from actrec.errors import ActrecError, ConfigError
from actrec.progress import NullProgress, Progress

KIB, MIB, GIB = 2**10, 2**20, 2**30
MAX_PROBED_BATCH = 1024
"""No per-replica batch above this is probed."""
PROBE_STEPS = 3
"""Timed steps per probe, after one untimed step (which traces the step function)."""
THROUGHPUT_TOLERANCE = 0.10
"""The largest batch within this fraction of the best clips/s is chosen."""
SLOWDOWN_FACTOR = 1.25
"""A batch more than this much slower than the step-time model is reported as slow."""
BISECTION_PRECISION = 8
"""Bisection stops when the gap is at most 1/8 of the largest batch that fits."""
DEFAULT_CPU_BUDGET_FRACTION = 0.8
"""Default CPU budget: this fraction of the memory available when the run starts."""
WATCHDOG_INTERVAL_SECONDS = 0.01
PROBE_RESULT_PREFIX = "ACTREC_PROBE "
DEVICES = ("cpu", "gpu")

_UNITS = {
    "": 1,
    "B": 1,
    "K": KIB,
    "KB": 1000,
    "KIB": KIB,
    "M": MIB,
    "MB": 1000**2,
    "MIB": MIB,
    "G": GIB,
    "GB": 1000**3,
    "GIB": GIB,
    "T": 2**40,
    "TB": 1000**4,
    "TIB": 2**40,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]*)\s*$")


# --- sizes and settings ---------------------------------------------------------------------


def parse_memory_size(text: str | int) -> int:
    """Bytes in "2GiB", "512MiB", "1.5GB", "800M", "1KB" or a plain number of bytes.

    Binary units: KiB, MiB, GiB, TiB (and K, M, G, T); decimal: KB, MB, GB, TB.
    """
    if isinstance(text, int) and not isinstance(text, bool):
        value, unit = float(text), ""
    else:
        match = _SIZE.match(str(text))
        if match is None or match.group(2).upper() not in _UNITS:
            raise ConfigError(
                f"memory size {text!r} is not valid; write a number and a unit, e.g. 2GiB, "
                "512MiB, 1.5GB (binary units KiB/MiB/GiB, decimal KB/MB/GB)"
            )
        value, unit = float(match.group(1)), match.group(2).upper()
    size = int(value * _UNITS[unit])
    if size < 1:
        raise ConfigError(f"memory size {text!r} is not valid; it must be at least 1 byte")
    return size


def format_bytes(count: int | float | None) -> str:
    """'1.50 GiB', '312 MiB', '900 KiB', '12 B'; '-' for None."""
    if count is None:
        return "-"
    for unit, size in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if count >= size:
            value = count / size
            return f"{value:.2f} {unit}" if value < 10 else f"{value:.0f} {unit}"
    return f"{int(count)} B"


def parse_batch_size(text: str | int) -> int | str:
    """A whole number >= 1 or "auto" (the value of `--batch-size`)."""
    if isinstance(text, int) and not isinstance(text, bool) and text >= 1:
        return text
    value = str(text).strip().lower()
    if value == AUTO:
        return AUTO
    if value.isdigit() and int(value) >= 1:
        return int(value)
    raise ConfigError(
        f"--batch-size {text!r} is not valid; give a whole number >= 1 (the global batch) or "
        "auto (probe the largest batch that fits and runs fastest)"
    )


def with_batch_size(recipe: Recipe, batch_size: int | str) -> Recipe:
    """`recipe` with train.batch_size set (`--batch-size N|auto`), keeping the learning
    rate tied to the batch the recipe was tuned for: train.lr_reference_batch becomes the
    recipe's own batch size when it was unset, so train.lr_coupling scales the rate."""
    train = recipe.train
    reference = train.lr_reference_batch
    if reference is None and train.batch_size != AUTO:
        reference = train.batch_size
    train = dataclasses.replace(train, batch_size=batch_size, lr_reference_batch=reference)
    return dataclasses.replace(recipe, train=train)


def with_remat(recipe: Recipe, remat: bool = True) -> Recipe:
    """`recipe` with model.remat set (`--remat`)."""
    return dataclasses.replace(recipe, model=dataclasses.replace(recipe.model, remat=remat))


def auto_fields(recipe: Recipe) -> list[str]:
    """The train keys set to auto ("batch_size", "max_per_replica_batch")."""
    return [
        key for key in ("batch_size", "max_per_replica_batch") if getattr(recipe.train, key) == AUTO
    ]


def decided_fields(recipe: Recipe) -> list[str]:
    """The train keys that resolving `recipe`'s auto values sets: batch_size=auto sets
    batch_size and, unless it is a number, max_per_replica_batch; max_per_replica_batch=auto
    sets max_per_replica_batch."""
    train = recipe.train
    if train.batch_size == AUTO:
        if isinstance(train.max_per_replica_batch, int):
            return ["batch_size"]
        return ["batch_size", "max_per_replica_batch"]
    return ["max_per_replica_batch"] if train.max_per_replica_batch == AUTO else []


def with_decided_values(recipe: Recipe, values: dict) -> Recipe:
    """`recipe` with the `decided_fields` taken from `values` (key -> number)."""
    fields = decided_fields(recipe)
    if not fields:
        return recipe
    train = dataclasses.replace(recipe.train, **{key: values[key] for key in fields})
    return dataclasses.replace(recipe, train=train)


def with_saved_decision(recipe: Recipe, saved: Recipe) -> Recipe:
    """`recipe` with its auto values replaced by the numbers in `saved` (the resolved
    recipe.yaml of the run being resumed)."""
    return with_decided_values(recipe, dataclasses.asdict(saved.train))


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


# --- probing ---------------------------------------------------------------------------------


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
    package_root = str(Path(__file__).resolve().parents[2])
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
    from actrec.config import recipe_to_dict

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


def _probe_main() -> None:
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

    from actrec.config import recipe_from_dict
    from actrec.models.segment_model import channels_for
    from actrec.train.strategy import build_strategy
    from actrec.train.trainer import build_trainer

    recipe = recipe_from_dict(request["recipe"])
    # Random weights: loading the ImageNet file changes no memory and may need a download.
    recipe = dataclasses.replace(recipe, model=dataclasses.replace(recipe.model, weights="none"))
    num_classes = int(request["num_classes"])
    data = recipe.data
    side = recipe.model.input_size or data.crop_size
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


# --- the throughput model and the decision ----------------------------------------------------


def _line(points: list[tuple[int, float]]) -> tuple[float, float]:
    """(a, c) of the line t = a + c b through `points` (batch, seconds): Theil-Sen (the
    median of the pairwise slopes, then the median intercept), which one batch slowed down
    by memory pressure does not bend; through the origin when all points share one batch."""
    slopes = [
        (t2 - t1) / (b2 - b1)
        for index, (b1, t1) in enumerate(points)
        for b2, t2 in points[index + 1 :]
        if b2 != b1
    ]
    if not slopes:
        return 0.0, statistics.median(t for _, t in points) / points[0][0]
    slope = statistics.median(slopes)
    return statistics.median(t - slope * b for b, t in points), slope


@dataclass(frozen=True)
class StepTimeModel:
    """t(b) = overhead_seconds + seconds_per_clip * b, fitted robustly (Theil-Sen).

    slower_than_modelled: batches that ran more than SLOWDOWN_FACTOR times slower than the
    model predicts (memory pressure near the limit, slower algorithms).
    """

    overhead_seconds: float
    seconds_per_clip: float
    slower_than_modelled: tuple[int, ...] = ()

    @classmethod
    def fit(cls, probes) -> StepTimeModel:
        """The model of the probes that fit (one batch: a line through the origin)."""
        points = [(p.batch, p.step_seconds) for p in probes if p.fits and p.step_seconds]
        if not points:
            raise ConfigError("no probed batch fits: there is nothing to fit a step time to")
        overhead, per_clip = _line(points)
        slow = tuple(
            batch
            for batch, seconds in points
            if seconds > SLOWDOWN_FACTOR * max(overhead + per_clip * batch, 1e-12)
        )
        return cls(overhead, per_clip, slow)

    def step_seconds(self, batch: int) -> float:
        return self.overhead_seconds + self.seconds_per_clip * batch

    def describe(self) -> str:
        """'43.6 ms + 8.26 ms x batch'."""
        sign = "+" if self.seconds_per_clip >= 0 else "-"
        return (
            f"{1000 * self.overhead_seconds:.1f} ms {sign} "
            f"{1000 * abs(self.seconds_per_clip):.2f} ms x batch"
        )


def throughput(probe: ProbeResult, model: StepTimeModel) -> float:
    """Clips/s credited to a probe that fits: b / max(measured, modelled step time)."""
    modelled = model.step_seconds(probe.batch)
    return probe.batch / max(probe.step_seconds or 0.0, modelled, 1e-12)


def ranked_batches(
    probes, model: StepTimeModel, tolerance: float = THROUGHPUT_TOLERANCE
) -> list[int]:
    """Batches that fit, best first: the largest within `tolerance` of the best throughput,
    then the next largest of those, then the rest by throughput."""
    fitting = [p for p in probes if p.fits and p.step_seconds]
    if not fitting:
        return []
    scores = {p.batch: throughput(p, model) for p in fitting}
    best = max(scores.values())
    near = sorted((b for b, s in scores.items() if s >= (1 - tolerance) * best), reverse=True)
    rest = sorted((b for b in scores if b not in near), key=lambda b: -scores[b])
    return near + rest


@dataclass(frozen=True)
class BatchDecision:
    """What `choose_batch` decided and the measurements it decided from.

    per_replica_batch: the chosen per-replica batch b: the micro-batch limit of the resolved
        recipe (max_per_replica_batch=auto: the largest limit <= the probed choice that
        every epoch's share splits under).
    probed_choice: the probed batch the throughput model chose.
    batch_size / max_per_replica_batch / lr_reference_batch: the resolved train values.
    learning_rate: the coupled rate at the starting global batch (before warm-up / decay).
    micro_batch / accumulation_steps: of the first epoch.
    """

    per_replica_batch: int
    probed_choice: int
    num_replicas: int
    device: str
    budget_bytes: int | None
    probes: tuple[ProbeResult, ...]
    model: StepTimeModel
    batch_size: int
    max_per_replica_batch: int | None
    lr_reference_batch: int | None
    learning_rate: float
    micro_batch: int
    accumulation_steps: int
    auto_fields: tuple[str, ...]
    remat: bool
    probe_seconds: float = 0.0

    def apply(self, recipe: Recipe) -> Recipe:
        """`recipe` with the decided numbers in place of auto."""
        values = {
            "batch_size": self.batch_size,
            "max_per_replica_batch": self.max_per_replica_batch,
        }
        return with_decided_values(recipe, values)

    def rows(self) -> list[dict]:
        """One row per probed batch, in batch order, for a table."""
        rows = []
        for probe in sorted(self.probes, key=lambda p: p.batch):
            modelled = self.model.step_seconds(probe.batch) if probe.fits else None
            rows.append(
                {
                    "batch": probe.batch,
                    # a probe stopped over budget was stopped when its peak passed it
                    "peak": (">" if probe.reason == "over budget" else "")
                    + format_bytes(probe.peak_bytes),
                    "fits": "yes" if probe.fits else f"no ({probe.reason})",
                    "step_ms": None if probe.step_seconds is None else 1000 * probe.step_seconds,
                    "model_ms": None if modelled is None else 1000 * modelled,
                    "clips_per_second": throughput(probe, self.model) if probe.fits else None,
                    "chosen": probe.batch == self.probed_choice,
                }
            )
        return rows

    def summary(self) -> str:
        """One sentence: the chosen batch, the global batch and the learning rate."""
        budget = format_bytes(self.budget_bytes) if self.budget_bytes else "the device memory"
        accumulation = (
            f" = {self.micro_batch} clips x {self.accumulation_steps} accumulation steps"
            if self.accumulation_steps > 1
            else ""
        )
        return (
            f"per-replica batch {self.per_replica_batch} (largest that fits {budget}: "
            f"{max((p.batch for p in self.probes if p.fits), default=0)}; step time model "
            f"{self.model.describe()}); global batch "
            f"{self.batch_size} on {self.num_replicas} replica(s){accumulation}; "
            f"lr {self.learning_rate:.4g}"
        )

    def to_json(self) -> dict:
        values = dataclasses.asdict(self)
        values["probes"] = [probe.to_json() for probe in self.probes]
        values["auto_fields"] = list(self.auto_fields)
        return values


def _candidate_cap(
    recipe: Recipe, num_replicas: int, num_train_videos: int | None, max_batch: int | None
) -> int:
    train = recipe.train
    cap = MAX_PROBED_BATCH if max_batch is None else max_batch
    if train.batch_size == AUTO:
        if isinstance(train.max_per_replica_batch, int):
            cap = min(cap, train.max_per_replica_batch)
        if train.max_batch_size is not None:
            cap = min(cap, train.max_batch_size // num_replicas)
        if num_train_videos:
            cap = min(cap, num_train_videos // num_replicas)
    else:
        from actrec.train.schedule import global_batch_size

        numeric = dataclasses.replace(train, max_per_replica_batch=None)
        shares = {global_batch_size(numeric, e) // num_replicas for e in range(train.epochs)}
        cap = min(cap, max(shares))
    return max(1, cap)


def _doubling(cap: int) -> list[int]:
    candidates, batch = [], 1
    while batch < cap:
        candidates.append(batch)
        batch *= 2
    return [*candidates, cap]


def _resolved(recipe: Recipe, batch: int, num_replicas: int) -> Recipe:
    """`recipe` with auto resolved for per-replica batch `batch`."""
    values = {"batch_size": batch * num_replicas, "max_per_replica_batch": batch}
    return with_decided_values(recipe, values)


def _check_schedule(recipe: Recipe, num_replicas: int, num_train_videos: int):
    """The first epoch's plan of a resolved recipe; ConfigError when an epoch cannot be
    split over the replicas and micro-batches."""
    from actrec.train.schedule import epoch_plan

    plans = [
        epoch_plan(recipe.train, recipe.runtime, epoch, num_replicas, num_train_videos)
        for epoch in range(recipe.train.epochs)
    ]
    return plans[0]


def _micro_batch_limit(recipe: Recipe, batch: int, num_replicas: int) -> int:
    """max_per_replica_batch=auto: the largest limit <= `batch` that every epoch's share
    splits into equal micro-batches under (1 always does)."""
    from actrec.train.schedule import global_batch_size

    numeric = dataclasses.replace(recipe.train, max_per_replica_batch=None)
    shares = {global_batch_size(numeric, e) // num_replicas for e in range(recipe.train.epochs)}
    accumulation = recipe.train.accumulation_steps

    def splits(limit: int) -> bool:
        return all(
            share % max(accumulation, math.ceil(share / limit)) == 0
            for share in shares
            if share > limit or accumulation > 1
        )

    limit = next(limit for limit in range(batch, 0, -1) if splits(limit))
    # Report the largest micro-batch actually used (share 16 under limit 5: 4 x 4 -> 4).
    used = max(
        share // max(accumulation, math.ceil(share / limit)) if share > limit or accumulation > 1
        else share
        for share in shares
    )  # fmt: skip
    return used if splits(used) else limit


def choose_batch(
    recipe: Recipe,
    num_classes: int,
    *,
    num_replicas: int = 1,
    num_train_videos: int | None = None,
    budget_bytes: int | None = None,
    device: str | None = None,
    steps: int = PROBE_STEPS,
    max_batch: int | None = None,
    tolerance: float = THROUGHPUT_TOLERANCE,
    progress: Progress | None = None,
    probe=probe_batch,
) -> BatchDecision:
    """Probe `recipe`'s model and decide its auto batch values (see the module docstring).

    num_replicas: replicas in sync (the per-replica batch is the same on each).
    num_train_videos: caps batch_size=auto at the training set (one step per epoch at most).
    budget_bytes: the memory budget (None: the default for `device`).
    device: "cpu" or "gpu" (default: what TensorFlow sees).
    max_batch: probe no per-replica batch above this.
    probe: the probing function (probe_batch; tests may pass their own).
    Raises ConfigError when not even a batch of 1 fits.
    """
    from actrec.train.schedule import coupled_learning_rate

    fields = tuple(auto_fields(recipe))
    if not fields:
        raise ConfigError(
            "choose_batch: neither train.batch_size nor train.max_per_replica_batch is auto"
        )
    progress = progress or NullProgress()
    device = device or accelerator()
    if budget_bytes is None:
        budget_bytes = default_memory_budget(device)
    started = time.monotonic()
    cap = _candidate_cap(recipe, num_replicas, num_train_videos, max_batch)
    results: dict[int, ProbeResult] = {}

    def run(batch: int) -> ProbeResult:
        result = probe(
            recipe, num_classes, batch, budget_bytes=budget_bytes, device=device, steps=steps
        )
        results[batch] = result
        shown = f"{1000 * result.step_seconds:.0f} ms/step" if result.step_seconds else ""
        verdict = "fits" if result.fits else f"does not fit ({result.reason})"
        progress.message(
            f"probe: batch {batch}: peak {format_bytes(result.peak_bytes)}"
            f"{', ' + shown if shown else ''}, {verdict}"
        )
        return result

    largest_fit, smallest_failure = 0, None
    for batch in _doubling(cap):
        if run(batch).fits:
            largest_fit = batch
        else:
            smallest_failure = batch
            break
    if largest_fit == 0:
        first = results[1]
        if first.reason == "over budget":
            needs = f"needs a peak of at least {format_bytes(first.peak_bytes)}"
        else:
            needs = f"failed: {first.reason}" + (
                f" (peak {format_bytes(first.peak_bytes)})" if first.peak_bytes else ""
            )
        raise ConfigError(
            f"not even a per-replica batch of 1 fits the memory budget of "
            f"{format_bytes(budget_bytes) if budget_bytes else 'the device'}: its training "
            f"step {needs}; give a larger --memory-budget, or use a smaller model, crop or "
            "number of segments, or --remat"
        )
    while smallest_failure is not None and smallest_failure - largest_fit > max(
        1, largest_fit // BISECTION_PRECISION
    ):
        middle = (largest_fit + smallest_failure) // 2
        if run(middle).fits:
            largest_fit = middle
        else:
            smallest_failure = middle

    probes = tuple(results[batch] for batch in sorted(results))
    model = StepTimeModel.fit(probes)
    train_videos = num_train_videos or MAX_PROBED_BATCH * num_replicas
    last_error = None
    for batch in ranked_batches(probes, model, tolerance):
        chosen = batch
        if "batch_size" not in fields:
            chosen = _micro_batch_limit(recipe, batch, num_replicas)
        resolved = _resolved(recipe, chosen, num_replicas)
        try:
            plan = _check_schedule(resolved, num_replicas, train_videos)
        except ConfigError as error:
            last_error = error
            continue
        return BatchDecision(
            per_replica_batch=chosen,
            probed_choice=batch,
            num_replicas=num_replicas,
            device=device,
            budget_bytes=budget_bytes,
            probes=probes,
            model=model,
            batch_size=resolved.train.batch_size,
            max_per_replica_batch=resolved.train.max_per_replica_batch,
            lr_reference_batch=resolved.train.lr_reference_batch,
            learning_rate=coupled_learning_rate(resolved.train, plan.global_batch),
            micro_batch=plan.per_replica_batch,
            accumulation_steps=plan.accumulation_steps,
            auto_fields=fields,
            remat=recipe.model.remat,
            probe_seconds=time.monotonic() - started,
        )
    raise last_error or ConfigError("no probed batch can be used")


if __name__ == "__main__":
    _probe_main()
