"""The adaptive batch-size schedule and the learning rate that follows it.

Global batch of epoch e (B_0 = train.batch_size, rho = train.batch_growth,
T = train.batch_growth_every, B_max = train.max_batch_size):

    B_e = min(floor(B_0 * rho ** floor(e / T)), B_max)        (B_0 when T = 0)

Learning rate at step s of epoch e (S steps per epoch, progress p = e + s / S epochs):

    coupled(B)  = lr                          "constant"  (Smith et al. 2017)
                = lr * B / B_ref              "linear"    (Goyal et al. 2017)
                = lr * sqrt(B / B_ref)        "sqrt"
                  with B_ref = train.lr_reference_batch, default B_0
    warm-up(p)  = 0.1 + 0.9 * p / W   while p < W = train.warmup_epochs, else 1
                  (the rate starts at a tenth of the coupled rate and rises per step)
    decay(e, p) = decay_factor ** (number of decay_epochs <= e)            "step"
                = (1 + cos(pi * (p - W) / (epochs - W))) / 2 after warm-up "cosine"
                = 1                                                        "none"
    lr(e, s)    = coupled(B_e) * warm-up(p) * decay(e, p)

`epoch_plan` splits an epoch's global batch over the replicas and, when a replica cannot
hold its share, into micro-batches whose gradients are accumulated.

Nothing here imports TensorFlow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from actrec.config.recipe import AUTO, RuntimeConfig, TrainConfig
from actrec.errors import ConfigError

WARMUP_START_FRACTION = 0.1
"""Warm-up starts at this fraction of the coupled learning rate."""
ROUNDING_TOLERANCE = 1e-9
"""A grown batch within this of a whole number is that number (1.1 * 100 -> 110, not 110.0...1)."""


def _require_epoch(epoch: int) -> None:
    if not isinstance(epoch, int) or epoch < 0:
        raise ConfigError(f"epoch={epoch!r} is not valid; epochs count from 0")


def _require_resolved(train: TrainConfig) -> None:
    for key in ("batch_size", "max_per_replica_batch"):
        if getattr(train, key) == AUTO:
            raise ConfigError(
                f"train.{key}=auto has not been resolved to a number yet; "
                "actrec.train.memory.choose_batch probes it (actrec train does this when the "
                "run starts)"
            )


def global_batch_size(train: TrainConfig, epoch: int) -> int:
    """B_e: the global batch (all replicas, all micro-batches) of `epoch` (from 0).

    A growth factor that is not a whole number rounds the batch down (10 x 1.5 x 1.5 -> 22).
    """
    _require_epoch(epoch)
    _require_resolved(train)
    if train.batch_growth_every <= 0 or train.batch_growth == 1:
        return train.batch_size
    growths = epoch // train.batch_growth_every
    cap = train.max_batch_size
    batch = float(train.batch_size)
    for _ in range(growths):  # grow step by step so a capped schedule never overflows
        batch *= train.batch_growth
        if cap is not None and batch >= cap:
            return cap
    return max(1, math.floor(batch + ROUNDING_TOLERANCE))


def reference_batch_size(train: TrainConfig) -> int:
    """B_ref: the global batch at which train.lr applies (default train.batch_size)."""
    return train.lr_reference_batch or train.batch_size


def coupled_learning_rate(train: TrainConfig, global_batch: int) -> float:
    """The learning rate for `global_batch` before warm-up and decay (train.lr_coupling)."""
    if global_batch < 1:
        raise ConfigError(f"global batch {global_batch} is not valid; it must be >= 1")
    ratio = global_batch / reference_batch_size(train)
    if train.lr_coupling == "constant":
        return train.lr
    if train.lr_coupling == "linear":
        return train.lr * ratio
    if train.lr_coupling == "sqrt":
        return train.lr * math.sqrt(ratio)
    raise ConfigError(
        f"train.lr_coupling={train.lr_coupling!r} is not valid; choose constant, linear or sqrt"
    )


def warmup_factor(train: TrainConfig, progress: float) -> float:
    """Multiplier of the coupled rate at `progress` epochs: rises linearly from 0.1 to 1."""
    if train.warmup_epochs <= 0 or progress >= train.warmup_epochs:
        return 1.0
    fraction = progress / train.warmup_epochs
    return WARMUP_START_FRACTION + (1.0 - WARMUP_START_FRACTION) * fraction


def decay_factor(train: TrainConfig, epoch: int, progress: float) -> float:
    """Multiplier of the decay rule: step (per epoch), cosine (per step, after warm-up), none."""
    if train.decay == "none":
        return 1.0
    if train.decay == "step":
        passed = sum(1 for boundary in train.decay_epochs if epoch >= boundary)
        return train.decay_factor**passed
    if train.decay == "cosine":
        span = train.epochs - train.warmup_epochs
        if span <= 0:
            return 1.0
        fraction = min(max((progress - train.warmup_epochs) / span, 0.0), 1.0)
        return 0.5 * (1.0 + math.cos(math.pi * fraction))
    raise ConfigError(f"train.decay={train.decay!r} is not valid; choose step, cosine or none")


def learning_rate(train: TrainConfig, epoch: int, step: int, steps_per_epoch: int) -> float:
    """The learning rate of optimiser step `step` (from 0) of `epoch` (from 0)."""
    _require_epoch(epoch)
    if steps_per_epoch < 1:
        raise ConfigError(f"steps_per_epoch={steps_per_epoch} is not valid; it must be >= 1")
    if step < 0:
        raise ConfigError(f"step={step} is not valid; steps count from 0")
    progress = epoch + step / steps_per_epoch
    coupled = coupled_learning_rate(train, global_batch_size(train, epoch))
    return coupled * warmup_factor(train, progress) * decay_factor(train, epoch, progress)


@dataclass(frozen=True)
class EpochPlan:
    """How one epoch runs.

    global_batch: B_e, clips per optimiser step over all replicas.
    per_replica_batch: clips per micro-batch on one replica (the input pipeline's batch).
    accumulation_steps: micro-batches per optimiser step (1 = no accumulation);
        global_batch = per_replica_batch * accumulation_steps * replicas.
    steps_per_epoch: optimiser steps in the epoch.
    learning_rate_start: the learning rate of the epoch's first step.
    """

    epoch: int
    global_batch: int
    per_replica_batch: int
    accumulation_steps: int
    steps_per_epoch: int
    learning_rate_start: float


def replica_share(train: TrainConfig, epoch: int, num_replicas: int) -> int:
    """Clips each replica contributes to one optimiser step of `epoch`."""
    if not isinstance(num_replicas, int) or num_replicas < 1:
        raise ConfigError(f"num_replicas={num_replicas!r} is not valid; it must be >= 1")
    batch = global_batch_size(train, epoch)
    if batch % num_replicas:
        raise ConfigError(
            f"train.batch_size: the global batch of epoch {epoch} is {batch}, which "
            f"{num_replicas} replicas cannot share equally; choose train.batch_size (and "
            f"train.max_batch_size) divisible by {num_replicas}, or use another replica count"
        )
    return batch // num_replicas


def micro_batching(train: TrainConfig, share: int) -> tuple[int, int]:
    """(per-replica micro-batch, accumulation steps) for a replica's `share` of a step.

    The share itself, unless it exceeds train.max_per_replica_batch or
    train.accumulation_steps > 1: then steps = max(train.accumulation_steps,
    ceil(share / max_per_replica_batch)) micro-batches of share / steps clips each, which
    must divide exactly.
    """
    _require_resolved(train)
    limit = train.max_per_replica_batch
    needs_limit = limit is not None and share > limit
    if not needs_limit and train.accumulation_steps <= 1:
        return share, 1
    steps = train.accumulation_steps
    if needs_limit:
        steps = max(steps, math.ceil(share / limit))
    if share % steps:
        working = next(count for count in range(steps, share + 1) if share % count == 0)
        raise ConfigError(
            f"train.accumulation_steps: a replica's share of {share} clips cannot be split into "
            f"{steps} equal micro-batches (train.accumulation_steps={train.accumulation_steps}, "
            f"train.max_per_replica_batch={limit}); set train.accumulation_steps={working} "
            f"(micro-batches of {share // working}), or train.max_per_replica_batch to a "
            f"divisor of {share}"
        )
    return share // steps, steps


def epoch_plan(
    train: TrainConfig,
    runtime: RuntimeConfig,
    epoch: int,
    num_replicas: int,
    num_train_videos: int,
) -> EpochPlan:
    """The batch split, step count and starting learning rate of `epoch`.

    steps_per_epoch = runtime.steps_per_epoch, else max(1, num_train_videos // global batch).
    """
    batch = global_batch_size(train, epoch)
    share = replica_share(train, epoch, num_replicas)
    per_replica_batch, accumulation_steps = micro_batching(train, share)
    steps = runtime.steps_per_epoch or max(1, num_train_videos // batch)
    return EpochPlan(
        epoch=epoch,
        global_batch=batch,
        per_replica_batch=per_replica_batch,
        accumulation_steps=accumulation_steps,
        steps_per_epoch=steps,
        learning_rate_start=learning_rate(train, epoch, 0, steps),
    )


def batch_schedule_summary(train: TrainConfig) -> str:
    """The batch schedule in a few characters: "256", "64->512 x2/10ep", "16 x2/5ep"."""
    if train.batch_growth_every <= 0 or train.batch_growth == 1:
        return str(train.batch_size)
    growth = f"x{train.batch_growth:g}/{train.batch_growth_every}ep"
    if train.max_batch_size is None:
        return f"{train.batch_size} {growth}"
    return f"{train.batch_size}->{train.max_batch_size} {growth}"


def learning_rate_summary(train: TrainConfig) -> str:
    """The base rate and its coupling: "0.001 linear@256", "0.001 constant"."""
    if train.lr_coupling == "constant":
        return f"{train.lr:g} constant"
    return f"{train.lr:g} {train.lr_coupling}@{reference_batch_size(train)}"
