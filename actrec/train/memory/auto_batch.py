"""train.batch_size / max_per_replica_batch "auto" at the start of a run: the chief probes
(actrec.train.memory), every worker receives the numbers, and a resumed run reuses the
numbers its recipe.yaml holds without probing."""

from __future__ import annotations

from actrec.cluster.collectives import agreed_flag, chief_values
from actrec.errors import ActrecError, ConfigError
from actrec.train.memory.choose import choose_batch
from actrec.train.memory.recipe_edits import with_decided_values


def resolve_auto_batch(
    strategy, recipe, cluster, *, has_run: bool, info, train_videos: int, memory_budget, progress
):
    """(recipe with numbers in place of auto, BatchDecision or None): the chief probes
    (unless the run being resumed already holds the numbers) and shares them."""
    decision, refusal = None, None
    if cluster.is_chief and not has_run:
        try:
            decision = choose_batch(
                recipe,
                info.num_classes,
                num_replicas=int(strategy.num_replicas_in_sync),
                num_train_videos=train_videos,
                budget_bytes=memory_budget,
                progress=progress,
            )
            recipe = decision.apply(recipe)
        except ActrecError as error:
            refusal = error
    if agreed_flag(strategy, refusal is not None, cluster.num_workers):
        raise refusal or ConfigError(
            "the chief worker could not choose the batch size; its output says why"
        )
    keys = ("batch_size", "max_per_replica_batch")
    numbers = [float(getattr(recipe.train, key) or 0) for key in keys] if cluster.is_chief else []
    shared = chief_values(strategy, numbers or [0.0] * 2, cluster.is_chief, cluster.num_workers)
    if not cluster.is_chief:
        values = dict(zip(keys, (round(value) or None for value in shared), strict=True))
        recipe = with_decided_values(recipe, values)
    return recipe, decision
