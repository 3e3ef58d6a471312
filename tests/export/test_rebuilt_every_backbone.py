"""An untrusted SavedModel export of every registered backbone predicts, rebuilt by actrec
(its recipe's network, its variables read as data), exactly as TensorFlow's loader runs it.

The rebuild (actrec.export.trust.savedmodel_rebuild) reads the export's variables by their
index in the rebuilt network's `model.variables`: a backbone whose variables came out in
another order or shape when built again would be refused, or would predict something else.
Each case trains a run for one step (batch statistics, so that outputs depend on the clip),
exports it as `actrec export` does, and predicts a test video both ways. The suite runs a
Keras-layout TSM and the test MoViNet (the tiny runs' exports in
test_untrusted_savedmodels.py cover the PyTorch-layout test network, flow, two streams and
the stream);
`ACTREC_EVERY_BACKBONE=all python -m pytest -n 0 tests/export/test_rebuilt_every_backbone.py`
runs every registered backbone in every variant (tests/backbone_cases.py)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from backbone_cases import cases, input_size
from refusal_harness import first_video
from tiny_recipe import TINY_RUN_SETTINGS

from actrec.config.files import load_recipe
from actrec.config.overrides import apply_overrides

SUITE_CASES = [("mobilenet_v2", "tsm", "rgb"), ("test_movinet", "movinet", "rgb")]
"""A Keras-layout TSM, and a network with custom gradients (MoViNet's hard-swish), whose
gradient functions tf.saved_model.save stores: the op check reaches them (EfficientNet's
and MoViNet's exports were refused by predict until their ops were allowed)."""


def rebuild_cases() -> list[tuple[str, str, str]]:
    """The suite's case, or every case of ACTREC_EVERY_BACKBONE (families / all)."""
    if os.environ.get("ACTREC_EVERY_BACKBONE") in ("families", "all"):
        return cases()
    return SUITE_CASES


@pytest.fixture(scope="module")
def prepared_set(tiny_runs, tmp_path_factory):
    """side -> (prepared folder, a video of it): the tiny runs' set (frames of 64x48) for a
    network that takes 48 px or less, else the same kind of set with frames large enough
    (InceptionV3's 75 px), made once."""
    from actrec.data.prepare.dataset import prepare_dataset
    from actrec.data.prepare.encode_video import PrepareSettings
    from actrec.data.sources import list_videos
    from actrec.data.synthetic.config import SyntheticConfig
    from actrec.data.synthetic.dataset import generate_synthetic_dataset

    made = {}

    def prepared(side: int) -> tuple[Path, Path]:
        if side <= 48:
            return tiny_runs["prepared"], first_video(tiny_runs)
        if side not in made:
            folder = tmp_path_factory.mktemp(f"frames-{side}")
            config = SyntheticConfig(
                videos_per_class=3, num_frames=12, width=side + 32, height=side + 8
            )
            generate_synthetic_dataset(folder / "raw", config)
            out = folder / "prepared"
            settings = PrepareSettings(frame_size="original")
            prepare_dataset(list_videos("synthetic", folder / "raw"), out, settings, workers=1)
            made[side] = out, next((folder / "raw").rglob("*.avi"))
        return made[side]

    return prepared


@pytest.mark.slow
@pytest.mark.parametrize(("backbone", "architecture", "modality"), rebuild_cases())
def test_the_rebuilt_export_predicts_as_tensorflow_loads_it(
    backbone, architecture, modality, prepared_set, tmp_path, monkeypatch
):
    import tensorflow as tf

    from actrec.export.writer import export_runs
    from actrec.predict.video_files import ExportedModel
    from actrec.train.run import train

    size = input_size(backbone)
    settings = [
        *TINY_RUN_SETTINGS,
        f"model.backbone={backbone}",
        f"model.architecture={architecture}",
        "model.weights=none",
        f"data.crop_size={size}",
        f"data.scale_size={size}",
        *(["data.new_length=2"] if modality == "flow" else []),
    ]
    recipe = apply_overrides(load_recipe(f"synthetic-{modality}"), settings)
    run = tmp_path / "run"
    prepared, video = prepared_set(size)
    train(recipe, prepared, run)
    export = tmp_path / "export"
    export_runs([run], export)

    trusted = ExportedModel(export, trust_model=True)
    inputs = trusted.video_inputs(video)
    expected = trusted.probabilities(inputs)

    def refuse(*args, **kwargs):
        raise AssertionError("tf.saved_model.load was called on an untrusted export")

    monkeypatch.setattr(tf.saved_model, "load", refuse)
    rebuilt = ExportedModel(export).probabilities(inputs)
    print(f"{backbone} {architecture} {modality}: {np.abs(rebuilt - expected).max():.1e}")
    assert expected.shape == rebuilt.shape and np.ptp(expected) > 0
    np.testing.assert_allclose(rebuilt, expected, rtol=0, atol=1e-6)
