"""The plan of a training run, decided once before anything is written (RunPlan).

The recipe goes through four stages, each its own name here and none rebound:

    requested   what the caller gave (a recipe file and --set)
    resumed     + the auto batch numbers recipe.yaml holds and the settings run.json records
                  as inherited, when the run folder holds a run to resume (life.resume)
    inherited   + the settings without weights taken from the starting point, model.weights
                  "run:PATH" (start.starting_point, start.source_settings)
    decided     + the numbers of train.batch_size / max_per_replica_batch "auto": the chief
                  probes, every worker receives them (memory.auto_batch)

`decided` is what recipe.yaml holds; the trainer trains `training_recipe` (a kept classifier
at the base learning rate, start.starting_point.training_recipe).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from actrec.config.validate import validate_recipe
from actrec.progress import Progress
from actrec.runs.record import RunRecord
from actrec.train.inputs.training_data import TrainingData, check_training_data, with_teacher
from actrec.train.life.resume import open_run_directory
from actrec.train.memory.auto_batch import resolve_auto_batch
from actrec.train.memory.recipe_edits import auto_fields
from actrec.train.start.starting_point import (
    StartingPoint,
    recipe_from_source,
    starting_point,
    training_recipe,
)

if TYPE_CHECKING:
    from actrec.cluster.strategy import ClusterInfo
    from actrec.config.recipe import Recipe
    from actrec.train.memory.decision import BatchDecision


@dataclass(frozen=True)
class RunPlan:
    """What a run trains, decided on every worker before the run folder is written.

    recipe: the decided recipe (recipe.yaml); training_recipe: the one the trainer uses.
    data: the checked prepared data, with the flow teacher of a distilled run.
    has_run: the folder holds a run to resume; previous: its run.json (empty: a new run).
    start: the starting point (model.weights "run:PATH"), else None.
    decision: the batch the chief probed now (train.batch_size=auto), else None.
    """

    recipe: Recipe
    training_recipe: Recipe
    data: TrainingData
    has_run: bool
    previous: RunRecord
    start: StartingPoint | None
    decision: BatchDecision | None


def plan_run(
    strategy,
    cluster: ClusterInfo,
    *,
    requested: Recipe,
    prepared_dir: Path,
    run_dir: Path,
    resume: str | None,
    given_settings: Collection[str],
    memory_budget: int | None,
    progress: Progress,
) -> RunPlan:
    """The run's plan (see the module): the recipe validated at each stage that changes it,
    the data checked, the folder judged by the chief and agreed by every worker."""
    validate_recipe(requested)
    checked = check_training_data(requested, prepared_dir)
    classes = checked.info.classes
    resumed, has_run, previous = open_run_directory(
        strategy,
        requested,
        cluster,
        run_dir,
        resume,
        given_settings=given_settings,
        classes=classes,
    )
    start = starting_point(resumed, classes, previous, given_settings)
    inherited = recipe_from_source(resumed, start)
    validate_recipe(inherited)
    data = with_teacher(checked, inherited, previous)  # a flow teacher, checked before any write
    # the same on every worker: they all take part in the probe's collectives
    decided, decision = (
        resolve_auto_batch(
            strategy,
            inherited,
            cluster,
            has_run=has_run,
            info=data.info,
            train_videos=data.train_videos,
            memory_budget=memory_budget,
            progress=progress,
        )
        if auto_fields(requested)
        else (inherited, None)
    )
    return RunPlan(
        recipe=decided,
        training_recipe=training_recipe(decided, start),
        data=data,
        has_run=has_run,
        previous=previous,
        start=start,
        decision=decision,
    )
