"""Choosing the auto batch: probe doubling batches, bisect, fit the step-time model, and
take the best batch the schedule can split (see actrec.train.memory)."""

from __future__ import annotations

import dataclasses
import math
import time

from actrec.config.recipe import AUTO, Recipe
from actrec.errors import ConfigError
from actrec.progress import NullProgress, Progress
from actrec.train.memory.budget import accelerator, default_memory_budget
from actrec.train.memory.decision import BatchDecision
from actrec.train.memory.probe import PROBE_STEPS, ProbeResult, probe_batch
from actrec.train.memory.recipe_edits import auto_fields, with_decided_values
from actrec.train.memory.step_time import THROUGHPUT_TOLERANCE, StepTimeModel, ranked_batches
from actrec.train.memory.units import format_bytes
from actrec.train.schedule import coupled_learning_rate, epoch_plan, global_batch_size

MAX_PROBED_BATCH = 1024
"""No per-replica batch above this is probed."""
BISECTION_PRECISION = 8
"""Bisection stops when the gap is at most 1/8 of the largest batch that fits."""


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
    plans = [
        epoch_plan(recipe.train, recipe.runtime, epoch, num_replicas, num_train_videos)
        for epoch in range(recipe.train.epochs)
    ]
    return plans[0]


def _micro_batch_limit(recipe: Recipe, batch: int, num_replicas: int) -> int:
    """max_per_replica_batch=auto: the largest limit <= `batch` that every epoch's share
    splits into equal micro-batches under (1 always does)."""
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
