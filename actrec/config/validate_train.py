"""The train section's checks: batch schedule, learning rate, optimizer, sync, divergence."""

from __future__ import annotations

import itertools

from actrec.config.checks import invalid, require_at_least, require_choice
from actrec.config.choices import (
    ADAM_STATES,
    DECAYS,
    LR_COUPLINGS,
    MIXED_PRECISIONS,
    OPTIMIZERS,
    SYNCS,
    WEIGHT_DECAY_MODES,
)
from actrec.config.recipe import AUTO, LR_MULT_KEYS, TrainConfig


def validate_train(train: TrainConfig) -> None:
    """ConfigError for the first invalid value or combination of the train section."""
    for key in ("epochs", "kavg_steps", "accumulation_steps"):
        require_at_least("train", train, key, 1)
    auto_batch = train.batch_size == AUTO
    if not auto_batch:
        require_at_least("train", train, "batch_size", 1)
    elif train.lr_coupling != "constant" and train.lr_reference_batch is None:
        raise invalid(
            "train",
            "batch_size",
            AUTO,
            f"with train.lr_coupling={train.lr_coupling} the learning rate follows the batch "
            "that auto chooses, relative to train.lr_reference_batch: set it to the global "
            f"batch train.lr={train.lr:g} was tuned for (`actrec train --batch-size auto` "
            "sets it to the recipe's batch size), or use train.lr_coupling=constant",
        )
    require_at_least("train", train, "batch_growth", 1.0)
    require_at_least("train", train, "batch_growth_every", 0)
    if train.batch_growth > 1 and train.batch_growth_every == 0:
        raise invalid(
            "train",
            "batch_growth_every",
            0,
            f"train.batch_growth={train.batch_growth} needs the epochs between growths "
            "(e.g. 10), or set train.batch_growth=1 for a constant batch",
        )
    if (
        train.max_batch_size is not None
        and not auto_batch
        and train.max_batch_size < train.batch_size
    ):
        raise invalid(
            "train",
            "max_batch_size",
            train.max_batch_size,
            f"use a value >= train.batch_size={train.batch_size}, or null for no cap",
        )
    if not train.lr > 0:
        raise invalid("train", "lr", train.lr, "use a learning rate > 0")
    require_at_least("train", train, "lr_reference_batch", 1, optional=True)
    require_choice("train", train, "lr_coupling", LR_COUPLINGS)
    if not 0 <= train.warmup_epochs < train.epochs:
        raise invalid(
            "train",
            "warmup_epochs",
            train.warmup_epochs,
            f"use a value in [0, train.epochs={train.epochs})",
        )
    require_choice("train", train, "decay", DECAYS)
    epochs = train.decay_epochs
    if any(epoch < 1 for epoch in epochs) or any(b <= a for a, b in itertools.pairwise(epochs)):
        raise invalid(
            "train",
            "decay_epochs",
            list(epochs),
            "use strictly increasing epochs >= 1, e.g. [30, 60] (or [] for no step)",
        )
    if not 0 < train.decay_factor <= 1:
        raise invalid("train", "decay_factor", train.decay_factor, "use a factor in (0, 1]")
    require_choice("train", train, "optimizer", OPTIMIZERS)
    if not 0 <= train.momentum < 1:
        raise invalid("train", "momentum", train.momentum, "use a value in [0, 1)")
    if train.nesterov and (train.optimizer != "sgd" or train.momentum == 0):
        raise invalid(
            "train", "nesterov", True, "Nesterov momentum needs optimizer sgd and momentum > 0"
        )
    require_at_least("train", train, "weight_decay", 0.0)
    require_choice("train", train, "weight_decay_mode", WEIGHT_DECAY_MODES)
    for key in LR_MULT_KEYS:
        if not getattr(train, key) > 0:
            raise invalid("train", key, getattr(train, key), "use a multiplier > 0 (1 for none)")
    if train.clip_norm is not None and not train.clip_norm > 0:
        raise invalid("train", "clip_norm", train.clip_norm, "use a norm > 0, or null for none")
    if not 0 <= train.label_smoothing < 1:
        raise invalid("train", "label_smoothing", train.label_smoothing, "use a value in [0, 1)")
    require_choice("train", train, "sync", SYNCS)
    require_choice("train", train, "adam_state", ADAM_STATES)
    require_choice("train", train, "mixed_precision", MIXED_PRECISIONS)
    if train.max_per_replica_batch != AUTO:
        require_at_least("train", train, "max_per_replica_batch", 1, optional=True)
    _validate_divergence(train)


def _validate_divergence(train: TrainConfig) -> None:
    if train.loss_upper_bound is not None and not train.loss_upper_bound > 0:
        raise invalid(
            "train", "loss_upper_bound", train.loss_upper_bound, "use a loss > 0, or null"
        )
    if train.loss_explosion_factor is not None and not train.loss_explosion_factor > 1:
        raise invalid(
            "train",
            "loss_explosion_factor",
            train.loss_explosion_factor,
            "use a factor > 1 (e.g. 5: a loss 5x the mean of the last 5), or null",
        )
    require_at_least("train", train, "max_recoveries", 0)
    if not 0 < train.recovery_lr_factor <= 1:
        raise invalid(
            "train",
            "recovery_lr_factor",
            train.recovery_lr_factor,
            "use a factor in (0, 1] (1 keeps the rate, 0.5 halves it after each recovery)",
        )
