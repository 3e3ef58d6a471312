"""The train section's checks of several values together: batch schedule, learning rate,
optimizer, sync. Each value alone is checked by its field (actrec.config.validate_fields)."""

from __future__ import annotations

from actrec.config.checks import invalid
from actrec.config.recipe import AUTO, TrainConfig
from actrec.errors import ConfigError


def validate_train(train: TrainConfig) -> None:
    """ConfigError for the first invalid combination of the train section."""
    auto_batch = train.batch_size == AUTO
    if auto_batch and train.lr_coupling != "constant" and train.lr_reference_batch is None:
        raise invalid(
            "train",
            "batch_size",
            AUTO,
            f"with train.lr_coupling={train.lr_coupling} the learning rate follows the batch "
            "that auto chooses, relative to train.lr_reference_batch: set it to the global "
            f"batch train.lr={train.lr:g} was tuned for (`actrec train --batch-size auto` "
            "sets it to the recipe's batch size), or use train.lr_coupling=constant",
        )
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
    if not 0 <= train.warmup_epochs < train.epochs:
        raise invalid(
            "train",
            "warmup_epochs",
            train.warmup_epochs,
            f"use a value in [0, train.epochs={train.epochs})",
        )
    if train.nesterov and (train.optimizer != "sgd" or train.momentum == 0):
        raise invalid(
            "train", "nesterov", True, "Nesterov momentum needs optimizer sgd and momentum > 0"
        )
    if train.optimizer == "adamw" and train.weight_decay_mode != "decoupled":
        raise invalid(
            "train",
            "weight_decay_mode",
            train.weight_decay_mode,
            "optimizer adamw decays the weights decoupled, at each variable's rate (PyTorch's "
            "AdamW): set train.weight_decay_mode=decoupled, or use optimizer adam for coupled L2",
        )
    if (train.mixup or train.cutmix) and train.distill_from is not None:
        raise ConfigError(
            "train.mixup / train.cutmix mix the student's clips and the flow teacher sees "
            "unmixed ones: set both to 0 to distil, or drop train.distill_from"
        )
    _validate_distill_layer(train)
    _validate_probe(train)
    if train.distill_from is not None and not str(train.distill_from).strip():
        raise invalid(
            "train",
            "distill_from",
            train.distill_from,
            "give the folder of a finished flow run or of a flow export, or null for none",
        )


def _validate_distill_layer(train: TrainConfig) -> None:
    """distill_features "maps" names its layer (distill_layer), and only "maps" has one. The
    layer's presence in the student's and the teacher's backbones needs the teacher:
    actrec.train.distillation.teacher checks it before anything is written."""
    if train.distill_features == "maps" and not train.distill_layer:
        raise ConfigError(
            "train.distill_features=maps matches the maps of one backbone layer: name it "
            "with train.distill_layer (e.g. block_5_add for MobileNetV2)"
        )
    if train.distill_layer and train.distill_features != "maps":
        raise ConfigError(
            f"train.distill_layer={train.distill_layer!r} names the layer whose maps "
            f"train.distill_features=maps matches, and distill_features is "
            f"{train.distill_features!r}; set train.distill_features=maps, or drop the layer"
        )


def _validate_probe(train: TrainConfig) -> None:
    """A probe (actrec.train.probe) trains a head on cached features: its batch is the
    head's (no memory to probe), and it has no student to distil into."""
    if train.probe == "none":
        return
    if train.batch_size == AUTO or train.max_per_replica_batch == AUTO:
        raise invalid(
            "train",
            "batch_size",
            AUTO,
            f"train.probe={train.probe} trains its head on cached features, whose batch "
            "needs no probing: give a number (e.g. 32)",
        )
    for name in ("mixup", "cutmix"):
        if getattr(train, name):
            raise invalid(
                "train",
                name,
                getattr(train, name),
                f"train.probe={train.probe} trains on cached features of whole clips, which "
                f"{name} cannot mix: use 0",
            )
    if train.distill_from is not None:
        raise invalid(
            "train",
            "distill_from",
            train.distill_from,
            f"train.probe={train.probe} trains only a head on frozen features: drop "
            "--distill-from, or set train.probe=none to distil into the whole network",
        )
