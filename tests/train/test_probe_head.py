"""The probe's linear head (actrec.train.probe.head) on arrays: each optimizer of the recipe
separates two blobs whose dimensions lie on scales 1 to 100 (the standardisation, folded
into the head, makes them one problem)."""

from __future__ import annotations

import numpy as np
import pytest

from actrec.config.recipe import TrainConfig
from actrec.train.probe.head import EpochResult, train_linear_head

ROWS = np.concatenate(
    [
        np.random.default_rng(0).normal(centre, 1.0, (40, 6)) * [1, 10, 100, 1, 1, 1]
        for centre in (0, 2)
    ]
).astype(np.float32)  # [80, 6], the dimensions on scales 1 to 100
LABELS = np.repeat([0, 1], 40)


@pytest.mark.parametrize(
    ("optimizer", "extra"),
    [
        ("sgd", {"lr": 0.1}),
        ("adam", {"lr": 0.01}),
        ("adamw", {"lr": 0.01, "weight_decay_mode": "decoupled"}),
    ],
)
def test_each_optimizer_separates_two_blobs(optimizer, extra):
    train = TrainConfig(
        epochs=15,
        batch_size=16,
        lr_coupling="constant",
        decay="cosine",
        optimizer=optimizer,
        **extra,
    )
    seen: list[EpochResult] = []
    head = train_linear_head(ROWS, LABELS, 2, train, seed=0, on_epoch=lambda r, h: seen.append(r))
    assert [r.epoch for r in seen] == list(range(15)) and {r.steps for r in seen} == {5}
    assert seen[-1].loss < seen[0].loss
    assert np.mean(head.logits(ROWS).argmax(axis=1) == LABELS) >= 0.9
    assert seen[-1].train_top1 == np.mean(head.logits(ROWS).argmax(axis=1) == LABELS)
