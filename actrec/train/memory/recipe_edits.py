"""The recipe edits of `--batch-size`, `--remat` and the auto batch values (which train keys
are auto, and the recipe with the decided numbers in their place)."""

from __future__ import annotations

import dataclasses

from actrec.config.recipe import AUTO, Recipe


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
