"""Fine-tuning: a run that starts from a finished run or export (`actrec train --init-from`,
model.weights run:PATH): what is loaded, what is made new, what is refused."""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest
from doc_commands import bash_blocks, shell_commands
from repo_paths import REPO_ROOT
from tiny_recipe import TINY_RUN_SETTINGS
from tiny_videos import write_tiny_video

from actrec.config.files import load_recipe
from actrec.config.overrides import apply_overrides
from actrec.models.segment_model import build_segment_model, segment_backbone
from actrec.models.transfer import transfer_weights
from actrec.runs.record import RunRecord

TINY = dict(backbone="test_mobilenet_v2", input_size=32, num_segments=2, weights="none")
CLASSES = tuple(f"class{k}" for k in range(4))


def _model(**options):
    keras.utils.set_random_seed(options.pop("seed", 0))
    return build_segment_model(num_classes=options.pop("num_classes", 4), **{**TINY, **options})


def _backbone_arrays(model) -> list[np.ndarray]:
    return [np.asarray(w) for w in segment_backbone(model).weights]


def _classifier(model) -> list[np.ndarray]:
    return model.get_layer("classifier").get_weights()


def test_tsn_to_tsm_with_the_same_classes_copies_every_weight():
    source = _model(architecture="tsn", seed=1)
    target = _model(architecture="tsm", num_segments=4, seed=2)
    report = transfer_weights(source, target, CLASSES, CLASSES)
    for have, want in zip(_backbone_arrays(target), _backbone_arrays(source), strict=True):
        np.testing.assert_array_equal(have, want)
    for have, want in zip(_classifier(target), _classifier(source), strict=True):
        np.testing.assert_array_equal(have, want)
    assert report.classifier == "kept" and report.cross_modality == ()
    assert report.backbone_tensors == len(segment_backbone(source).weights)


def test_other_classes_get_a_new_classifier_and_reordered_ones_keep_theirs_by_name():
    source = _model(seed=1)
    other = _model(seed=2, num_classes=3)
    before = _classifier(other)
    report = transfer_weights(source, other, CLASSES, ("class0", "class1", "walk"))
    assert report.classifier == "new"
    for have, want in zip(_classifier(other), before, strict=True):
        np.testing.assert_array_equal(have, want)  # left as initialised
    np.testing.assert_array_equal(_backbone_arrays(other)[0], _backbone_arrays(source)[0])

    reordered = _model(seed=3)
    names = ("class2", "class0", "class3", "class1")
    report = transfer_weights(source, reordered, CLASSES, names)
    kernel, bias = _classifier(source)
    assert report.classifier == "kept, reordered"
    np.testing.assert_array_equal(_classifier(reordered)[0], kernel[:, [2, 0, 3, 1]])
    np.testing.assert_array_equal(_classifier(reordered)[1], bias[[2, 0, 3, 1]])
    clip = np.random.default_rng(0).uniform(0, 255, (1, 2, 32, 32, 3)).astype("float32")
    logits = np.asarray(source(clip, training=False))[0]
    np.testing.assert_allclose(
        np.asarray(reordered(clip, training=False))[0], logits[[2, 0, 3, 1]], rtol=1e-5
    )


def test_rgb_to_flow_averages_the_first_convolution_over_rgb_and_copies_the_rest():
    source = _model(seed=1)
    target = _model(seed=2, modality="flow", new_length=2)
    report = transfer_weights(source, target, CLASSES, CLASSES)
    rgb, flow = _backbone_arrays(source), _backbone_arrays(target)
    assert flow[0].shape == (3, 3, 4, 16) and rgb[0].shape == (3, 3, 3, 16)  # Conv1's kernel
    expected = np.repeat(rgb[0].mean(axis=2, keepdims=True), 4, axis=2)
    np.testing.assert_allclose(flow[0], expected, rtol=1e-6)
    for have, want in zip(flow[1:], rgb[1:], strict=True):
        np.testing.assert_array_equal(have, want)
    assert len(report.cross_modality) == 1 and "Conv1" in report.cross_modality[0]


# --- through `actrec train` on the tiny runs ----------------------------------------------


TINY_SETTINGS = TINY_RUN_SETTINGS


def _train_arguments(prepared, run_dir, source, *settings, recipe="synthetic-tsm"):
    arguments = ["train", "--recipe", recipe, "--data", prepared, "--workdir", run_dir]
    if source is not None:
        arguments += ["--init-from", source]
    for setting in [*TINY_SETTINGS, *settings]:
        arguments += ["--set", setting]
    return arguments


def test_init_from_a_run_prints_what_it_loaded_and_records_it(tiny_runs, cli_runner, tmp_path):
    run_dir = tmp_path / "tsm-from-tsn"
    result = cli_runner(
        *_train_arguments(
            tiny_runs["prepared"], run_dir, tiny_runs["rgb"], "train.classifier_lr_mult=5"
        )
    )
    assert result.exit_code == 0, result.output
    assert f"initialised from run {tiny_runs['rgb'].resolve()}" in result.output
    tensors = len(segment_backbone(_model()).weights)
    assert f"loaded {tensors} backbone weight tensors" in result.output
    assert "classifier kept (the same classes)" in result.output
    assert "TSN -> TSM: the temporal shift has no weights" in result.output
    assert "the kept classifier trains at the base rate" in result.output
    assert f"actrec export {run_dir} --out {run_dir}-export" in result.output
    record = json.loads((run_dir / "run.json").read_text())
    assert record["initialised_from"] == {
        "path": str(tiny_runs["rgb"].resolve()),
        "kind": "run",
        "recipe": "synthetic-rgb",
        "architecture": "tsn",
        "backbone": "test_mobilenet_v2",
        "modality": "rgb",
        "num_classes": 8,
        "keeps_classifier": True,
        "stream": 0,
        "inherited": [],  # a TSM from a TSN keeps its shift (tests/train/test_source_settings.py)
        "differences": [],
    }
    assert "model:\n" in (run_dir / "recipe.yaml").read_text()
    assert f"weights: run:{tiny_runs['rgb']}" in (run_dir / "recipe.yaml").read_text()
    from actrec.export.writer import export_runs

    export_runs([run_dir], tmp_path / "export")
    card = " ".join((tmp_path / "export" / "MODEL_CARD.md").read_text().split())
    assert f"Initialised from: run `{tiny_runs['rgb'].resolve()}` (recipe `synthetic-rgb`" in card
    assert "8 classes; classifier kept)" in card


def _assert_flow_export_initialises_the_trained_weights(export, flow_run) -> None:
    """A flow TSN started from `export` (model.weights=run:EXPORT) holds every weight of the
    tiny flow run it was exported from, its classifier kept."""
    from actrec.runs.trained import build_trained_model, load_trained_run
    from actrec.train.start.starting_point import load_starting_weights, starting_point

    classes = load_trained_run(flow_run).classes
    expected = build_trained_model(load_trained_run(flow_run))
    recipe = apply_overrides(
        load_recipe("synthetic-flow"),
        [*TINY_SETTINGS, "data.new_length=2", f"model.weights=run:{export}"],
    )
    start = starting_point(recipe, classes, RunRecord())
    assert (start.kind, start.modality, start.keeps_classifier) == ("export", "flow", True)
    model = build_segment_model(num_classes=len(classes), modality="flow", new_length=2, **TINY)
    lines = load_starting_weights(model, start, recipe, classes)
    assert lines[2] == "classifier kept (the same classes)"
    for have, want in zip(model.weights, expected.weights, strict=True):
        np.testing.assert_array_equal(np.asarray(have), np.asarray(want))


def test_init_from_an_export_loads_the_weights_the_run_trained(tiny_runs, tiny_exports):
    for export in ("flow", "two-stream"):
        _assert_flow_export_initialises_the_trained_weights(tiny_exports[export], tiny_runs["flow"])


def test_init_from_an_export_of_the_earlier_layout_loads_its_weights(
    tiny_runs, tiny_exports, tmp_path
):
    """Exports written before actrec.export.saved_variables tracked the Keras models (as
    `models`) instead of their variables; they still initialise a run."""
    import shutil

    import tensorflow as tf

    from actrec.export.saved_variables import EXPORT_VARIABLES
    from actrec.runs.trained import build_trained_model, load_trained_run

    earlier = tmp_path / "earlier-export"
    shutil.copytree(tiny_exports["flow"], earlier)
    for new_layout_file in (earlier / "variables").iterdir():
        new_layout_file.unlink()
    trained = build_trained_model(load_trained_run(tiny_runs["flow"]))
    prefix = str(earlier / "variables" / "variables")
    tf.train.Checkpoint(models=[trained]).write(prefix)
    assert not any(name.startswith(EXPORT_VARIABLES) for name, _ in tf.train.list_variables(prefix))
    _assert_flow_export_initialises_the_trained_weights(earlier, tiny_runs["flow"])


@pytest.mark.parametrize(
    ("source", "settings", "message"),
    [
        (
            "rgb",
            ["model.backbone=resnet50"],
            "it is a test_mobilenet_v2; leave --set model.backbone out (the source's is used)",
        ),
        ("flow", [], "cross-modality initialisation goes from RGB to flow only"),
        ("missing", [], "nothing-here: no such folder; --init-from"),
        ("unfinished", [], "its training has not finished"),
    ],
)
def test_a_source_that_does_not_fit_is_refused_before_anything_is_written(
    tiny_runs, cli_runner, tmp_path, source, settings, message
):
    if source == "missing":
        path = tmp_path / "nothing-here"
    elif source == "unfinished":
        path = tmp_path / "unfinished"
        path.mkdir()
        for name in ("recipe.yaml", "run.json"):
            (path / name).write_bytes((tiny_runs["rgb"] / name).read_bytes())
    else:
        path = tiny_runs[source]
    run_dir = tmp_path / "refused"
    result = cli_runner(*_train_arguments(tiny_runs["prepared"], run_dir, path, *settings))
    assert result.exit_code != 0
    assert message in " ".join(result.output.split())
    assert "Traceback" not in result.output
    assert not run_dir.exists()


# --- fine-tuning beats training from scratch on a small new set -----------------------------

NEW_CLASSES = ("MoveLeft", "MoveRight", "RotateCounterclockwise", "ZoomIn")


@pytest.fixture(scope="module")
def small_new_set(tmp_path_factory):
    """4 of the 8 synthetic classes, drawn with another seed: 5 training and 5 test videos a
    class, RGB only."""
    from dataclasses import replace

    from actrec.data.prepare.dataset import prepare_dataset
    from actrec.data.prepare.encode_video import PrepareSettings
    from actrec.data.sources import list_videos
    from actrec.data.synthetic.config import SyntheticConfig
    from actrec.data.synthetic.dataset import generate_synthetic_dataset

    folder = tmp_path_factory.mktemp("small-new-set")
    config = SyntheticConfig(videos_per_class=10, test_fraction=0.5, seed=12345)
    generate_synthetic_dataset(folder / "raw", config)
    listing = list_videos("synthetic", folder / "raw")
    label = {listing.classes.index(name): index for index, name in enumerate(NEW_CLASSES)}
    entries = tuple(replace(e, label=label[e.label]) for e in listing.entries if e.label in label)
    listing = replace(listing, classes=NEW_CLASSES, entries=entries)
    out = folder / "prepared"
    prepare_dataset(listing, out, PrepareSettings(frame_size="original", flow="none"))
    return out


@pytest.mark.slow
def test_fine_tuning_a_trained_tsm_beats_the_same_recipe_from_scratch(
    synthetic_tsm_run, small_new_set, tmp_path
):
    from actrec.evaluation.evaluate import evaluate_run
    from actrec.evaluation.protocols import resolve_protocol
    from actrec.train.run import train

    schedule = ["train.epochs=6", "train.batch_size=8", "runtime.steps_per_epoch=4"]
    schedule += ["runtime.validate_every_epochs=0"]
    top1 = {}
    for name, start in (
        ("scratch", []),
        ("fine-tuned", [f"model.weights=run:{synthetic_tsm_run[1]}"]),
    ):
        recipe = apply_overrides(load_recipe("synthetic-tsm"), [*schedule, *start])
        train(recipe, small_new_set, tmp_path / name)
        evaluation = evaluate_run(
            tmp_path / name, resolve_protocol("centre"), out_dir=tmp_path / f"{name}-eval"
        )
        top1[name] = evaluation.metrics.top1
    record = json.loads((tmp_path / "fine-tuned" / "run.json").read_text())
    assert record["initialised_from"]["keeps_classifier"] is False  # 4 classes, not 8
    assert top1["fine-tuned"] >= top1["scratch"] + 0.20, top1
    print(f"test top-1 after 24 steps on 20 videos: {top1}")


# --- docs/fine-tuning.md: "your own videos", end to end ------------------------------------

WALKTHROUGH_CLASSES = ("Clapping", "Jumping", "Waving")
# What the test adds to the page's `train` command: the tiny network instead of ResNet50
# from ImageNet (no download in tests), two steps a phase.
WALKTHROUGH_TRAIN_SETTINGS = [
    *TINY_SETTINGS,
    "model.weights=none",
    "model.partial_bn=false",
    "train.epochs=2",
    "runtime.validate_every_epochs=1",
]


def test_the_your_own_videos_walkthrough_runs_as_written(cli_runner, tmp_path, monkeypatch):
    """docs/fine-tuning.md's first block, command by command, on a folder of tiny videos
    laid out as the page shows; `train` gets the tiny network (WALKTHROUGH_TRAIN_SETTINGS)."""
    page = (REPO_ROOT / "docs" / "fine-tuning.md").read_text(encoding="utf-8")
    commands = shell_commands(bash_blocks(page)[0])
    assert [words[:2] for words in commands] == [
        ["actrec", "prepare"],
        ["actrec", "prepare"],
        ["actrec", "train"],
        ["actrec", "eval"],
        ["actrec", "export"],
        ["actrec", "predict"],
    ]
    monkeypatch.chdir(tmp_path)
    for label, name in enumerate(WALKTHROUGH_CLASSES):
        for index in range(1, 11):
            seed = 100 * label + index
            write_tiny_video(
                tmp_path / "datasets/raw/my-videos" / name / f"clip{index:02d}.mp4", seed=seed
            )
    outputs = {}
    for words in commands:
        arguments = words[1:]
        if words[1] == "train":
            arguments += [part for s in WALKTHROUGH_TRAIN_SETTINGS for part in ("--set", s)]
        result = cli_runner(*arguments)
        assert result.exit_code == 0, f"{' '.join(words)}:\n{result.output}"
        outputs[words[1] + ("-dry-run" if "--dry-run" in words else "")] = " ".join(
            result.output.split()
        )
    assert all(name in outputs["prepare-dry-run"] for name in WALKTHROUGH_CLASSES)
    trained = outputs["train"]
    assert "validation accuracy per class" in trained
    assert "actrec eval runs/my-videos-tsm --checkpoint best" in trained
    assert (
        "actrec export runs/my-videos-tsm --out runs/my-videos-tsm-export --checkpoint best"
        in trained
    )
    assert (tmp_path / "runs/my-videos-tsm/best.weights.h5").is_file()
    record = json.loads((tmp_path / "runs/my-videos-tsm/run.json").read_text())
    assert len(record["validation_confusion"]) == 3
    assert "Waving" in outputs["predict"]
    card = (tmp_path / "models/my-videos-tsm/MODEL_CARD.md").read_text()
    assert "finetune-tsm" in card
