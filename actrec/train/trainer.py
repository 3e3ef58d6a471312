"""The recipe's DistributedTrainer: model, optimizer and synchronisation from the recipe."""

from __future__ import annotations


def build_trainer(strategy, recipe, num_classes: int, input_transform=None, teacher=None):
    """An actrec.train.loop.DistributedTrainer on `strategy` for `recipe`'s model, optimizer
    and synchronisation (recipe.train), seeded by recipe.runtime.seed. input_transform: run
    on each batch before the model (e.g. the on-device clip finishing). teacher: the
    checked flow teacher of a distilled run (actrec.train.teacher.Teacher), or None."""
    from actrec.models.factory import model_builder
    from actrec.train.distillation import distillation_settings
    from actrec.train.loop import DistributedTrainer

    return DistributedTrainer(
        strategy,
        model_builder(recipe.model, recipe.data, num_classes),
        recipe.train,
        seed=recipe.runtime.seed,
        input_transform=input_transform,
        distillation=distillation_settings(teacher, recipe),
    )
