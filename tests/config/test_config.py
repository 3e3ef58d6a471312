"""Recipes: built-ins, YAML round trips, overrides and validation (actrec.config)."""

from __future__ import annotations

import dataclasses
from importlib import resources

import pytest
import yaml

from actrec.config.files import dump_recipe, load_recipe, recipe_to_dict, recipe_to_yaml
from actrec.config.inheritance import builtin_recipe_names
from actrec.config.overrides import apply_overrides
from actrec.config.recipe import (
    SECTION_TYPES,
    DataConfig,
    ModelConfig,
    Recipe,
    RuntimeConfig,
    TrainConfig,
    resolved_partial_bn,
)
from actrec.config.validate import validate_recipe
from actrec.data.input.clip_spec import clip_spec
from actrec.errors import ConfigError

EXPECTED_RECIPES = {
    "tsn-rgb-ucf101",
    "tsn-flow-ucf101",
    "tsn-rgb-hmdb51",
    "tsn-flow-hmdb51",
    "tsm-kinetics400",
    "tsm-ucf101-from-kinetics400",
    "tsm-hmdb51-from-kinetics400",
    "finetune-tsm",
    "finetune-tsm-online",
    "finetune-tsn-rgb",
    "finetune-tsn-flow",
    "two-stream-kavg-adaptive-rgb-ucf101",
    "two-stream-kavg-adaptive-flow-ucf101",
    "synthetic-rgb",
    "synthetic-tsm",
    "synthetic-tsm-online",
    "synthetic-tsm-mars",
    "synthetic-tsm-online-mars",
    "synthetic-flow",
    "tsm-something-something-v2",
    "tsm-jester",
    "videomae-b-ucf101-from-kinetics400",
    "videomae-b-hmdb51-from-kinetics400",
    "videomae-folder",
    "movinet-a0-stream-kinetics600",
    "movinet-a0-stream-folder",
    "videomae-probe-folder",
}
UCF101_SPLIT1_TRAIN_VIDEOS = 9537
HMDB51_SPLIT1_TRAIN_VIDEOS = 3570


def small_recipe(**sections) -> Recipe:
    return Recipe(name="small", **sections)


# --- built-in recipes ---------------------------------------------------------------------


def test_builtin_names_are_the_expected_set():
    assert set(builtin_recipe_names()) == EXPECTED_RECIPES
    assert builtin_recipe_names() == sorted(builtin_recipe_names())


@pytest.mark.parametrize("name", sorted(EXPECTED_RECIPES))
def test_builtin_recipe_loads_and_validates(name):
    recipe = load_recipe(name)
    assert recipe.name == name
    assert recipe.description and recipe.reference
    validate_recipe(recipe)


@pytest.mark.parametrize("name", sorted(EXPECTED_RECIPES))
def test_builtin_recipe_file_states_a_value_once(name):
    """A value lives in one file: a recipe repeats a value of the recipe it extends only to
    cite its own source for it (a row of its fidelity table)."""
    from actrec.config.inheritance import read_recipe_file
    from actrec.config.recipe_sources import source_table

    recipe_file = read_recipe_file(name)
    parent = recipe_file.values.get("extends")
    if parent is None:
        return
    parent_values = recipe_to_dict(load_recipe(parent))
    own_table = yaml.safe_load(
        resources.files("actrec").joinpath("recipes", "sources", f"{name}.yaml").read_text()
    )
    for section, values in recipe_file.values.items():
        if section not in SECTION_TYPES:
            continue
        for key, value in values.items():
            field = f"{section}.{key}"
            if value == parent_values[section][key]:
                assert field in own_table["fields"], f"{name} repeats {field} of {parent}"
                assert source_table(name).row(field).value == value


def test_a_recipe_file_extends_a_builtin_recipe_or_a_file_beside_it(tmp_path):
    (tmp_path / "base.yaml").write_text("name: base\nextends: tsn-rgb-ucf101\ntrain: {lr: 0.01}\n")
    (tmp_path / "mine.yaml").write_text("extends: base.yaml\ntrain: {epochs: 3}\n")
    recipe = load_recipe(tmp_path / "mine.yaml")
    reference = load_recipe("tsn-rgb-ucf101")
    assert recipe.name == "mine" and (recipe.train.epochs, recipe.train.lr) == (3, 0.01)
    assert recipe.data == reference.data and recipe.model == reference.model
    assert recipe.train.decay_epochs == reference.train.decay_epochs
    assert load_recipe("tsm-kinetics400").model.shift_fraction == 0.125  # from base/tsm
    assert load_recipe("synthetic-tsm").model.shift_fraction == 0.25  # its own, over base/tsm


def test_extends_errors_name_the_file_and_the_fix(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("extends: tsn-rgb-ucf10\n")
    with pytest.raises(ConfigError, match=r"mine\.yaml: extends 'tsn-rgb-ucf10', which is"):
        load_recipe(path)
    (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    with pytest.raises(ConfigError, match="extend each other in a loop: a -> b -> a"):
        load_recipe(tmp_path / "a.yaml")
    path.write_text("extends: tsn-rgb-ucf101\ntrain: [1]\n")
    with pytest.raises(ConfigError, match="section 'train' must be a mapping"):
        load_recipe(path)


def _steps_per_epoch(videos: int, batch: int) -> int:
    return videos // batch


@pytest.mark.parametrize(
    ("name", "videos", "iterations", "decay_iterations"),
    [
        # yjxiong/temporal-segment-networks models/*/tsn_bn_inception_*_solver.prototxt
        ("tsn-rgb-ucf101", UCF101_SPLIT1_TRAIN_VIDEOS, 3500, (1500, 3000)),
        ("tsn-flow-ucf101", UCF101_SPLIT1_TRAIN_VIDEOS, 18000, (10000, 16000)),
        ("tsn-rgb-hmdb51", HMDB51_SPLIT1_TRAIN_VIDEOS, 2500, (1000, 2000)),
        ("tsn-flow-hmdb51", HMDB51_SPLIT1_TRAIN_VIDEOS, 7000, (4000, 6000)),
    ],
)
def test_tsn_epochs_encode_the_solvers_iterations(name, videos, iterations, decay_iterations):
    train = load_recipe(name).train
    steps = _steps_per_epoch(videos, train.batch_size)
    assert train.batch_size == 128  # 32 per GPU x 4 GPUs, iter_size 1 (the released solvers)
    # The run lasts at least the solver's iterations, by less than one epoch more.
    assert iterations <= train.epochs * steps < iterations + steps
    for epoch, iteration in zip(train.decay_epochs, decay_iterations, strict=True):
        assert abs(epoch * steps - iteration) <= steps / 2


def test_tsn_hyperparameters():
    rgb, flow = load_recipe("tsn-rgb-ucf101"), load_recipe("tsn-flow-ucf101")
    assert (rgb.train.lr, flow.train.lr) == (0.001, 0.005)
    assert (rgb.model.dropout, flow.model.dropout) == (0.8, 0.7)
    assert (rgb.data.new_length, flow.data.new_length) == (1, 5)
    for recipe in (rgb, flow):
        assert recipe.data.num_segments == 3
        assert recipe.model.partial_bn is True
        assert recipe.train.momentum == 0.9
        assert recipe.train.weight_decay == 5e-4
        assert recipe.train.weight_decay_mode == "coupled" and recipe.train.bias_lr_mult == 2.0
        assert recipe.data.more_fix_crop is True
        assert "84.5" in recipe.reference and "92.0" in recipe.reference
    assert (rgb.train.clip_norm, flow.train.clip_norm) == (40.0, 20.0)  # the Caffe solvers
    assert (rgb.train.first_conv_lr_mult, flow.train.first_conv_lr_mult) == (1.0, 5.0)
    assert rgb.data.scales == (1.0, 0.875, 0.75, 0.66) and flow.data.scales == (1.0, 0.875, 0.75)
    assert "68.5" in load_recipe("tsn-flow-hmdb51").reference


def test_tsm_hyperparameters():
    recipe = load_recipe("tsm-kinetics400")
    assert (recipe.model.architecture, recipe.model.backbone) == ("tsm", "resnet50_torchvision")
    assert recipe.data.num_segments == 8
    assert (recipe.train.lr, recipe.train.lr_reference_batch) == (0.02, 128)
    assert recipe.train.lr_coupling == "linear"
    assert recipe.train.decay_epochs == (20, 40) and recipe.train.epochs == 50
    assert recipe.train.weight_decay == 1e-4 and recipe.model.dropout == 0.5
    assert recipe.model.partial_bn is False and recipe.model.shift_fraction == 0.125
    assert recipe.train.classifier_lr_mult == 5.0 and recipe.train.bias_lr_mult == 2.0  # fc_lr5
    assert recipe.train.weight_decay_mode == "coupled"


@pytest.mark.parametrize("dataset", ["ucf101", "hmdb51"])
def test_tsm_finetuning_from_kinetics(dataset):
    """The README's fine-tuning command (scripts/finetune_tsm_ucf101_rgb_8f.sh; HMDB51 with
    the same values, the authors in issue #91) on the tsm-kinetics400 network and run."""
    recipe = load_recipe(f"tsm-{dataset}-from-kinetics400")
    kinetics = load_recipe("tsm-kinetics400")
    assert recipe.model.weights == "run:runs/tsm-kinetics400"
    for field in ("architecture", "backbone", "shift_fraction", "shift_placement"):
        assert getattr(recipe.model, field) == getattr(kinetics.model, field), field
    assert recipe.data.num_segments == kinetics.data.num_segments == 8
    assert (recipe.train.lr, recipe.train.batch_size, recipe.train.lr_reference_batch) == (
        0.001,
        64,
        64,
    )
    assert recipe.train.lr_coupling == "linear"
    assert recipe.train.epochs == 25 and recipe.train.decay_epochs == (10, 20)
    assert recipe.train.weight_decay == 5e-4  # opts.py's default: the command sets no --wd
    assert recipe.model.dropout == 0.8 and recipe.model.partial_bn is True  # no --npb
    assert recipe.train.classifier_lr_mult == 5.0  # fc_lr5: a new classifier
    assert recipe.train.clip_norm == 20.0 and recipe.train.bias_lr_mult == 2.0
    assert recipe.data.validation_split == "auto" and recipe.data.validation_holdout == 0
    assert {"ucf101": "95.9", "hmdb51": "73.5"}[dataset] in recipe.reference


@pytest.mark.parametrize("name", ["finetune-tsm", "finetune-tsn-rgb", "finetune-tsn-flow"])
def test_finetune_recipes_for_any_data(name):
    """From ImageNet unless --init-from; the rate coupled to the batch, so another batch keeps
    the rate per clip; validation on the data's val split with best.weights.h5."""
    recipe = load_recipe(name)
    assert recipe.model.weights == "imagenet"
    assert recipe.train.lr_coupling == "linear" and recipe.train.lr_reference_batch
    assert recipe.train.batch_size <= 16
    assert recipe.data.validation_split == "auto" and recipe.data.validation_holdout == 0
    assert recipe.runtime.validate_every_epochs >= 1
    assert recipe.runtime.checkpoint_every_steps == 1000
    assert recipe.model.partial_bn is True and recipe.train.classifier_lr_mult == 5.0
    batch_32 = apply_overrides(recipe, ["train.batch_size=32"]).train
    assert batch_32.lr == recipe.train.lr and batch_32.lr_reference_batch == (
        recipe.train.lr_reference_batch
    )
    validate_recipe(apply_overrides(recipe, ["model.weights=run:runs/tsm-kinetics400"]))


def test_finetune_family_shares_tsms_finetuning():
    tsm, rgb, flow = (load_recipe(f"finetune-{name}") for name in ("tsm", "tsn-rgb", "tsn-flow"))
    published = load_recipe("tsm-ucf101-from-kinetics400")
    for recipe in (tsm, rgb):
        assert (recipe.train.lr, recipe.train.lr_reference_batch) == (0.001, 64)
        assert recipe.train.epochs == 25 and recipe.train.decay_epochs == (10, 20)
        assert recipe.train.weight_decay == published.train.weight_decay
        assert recipe.model.dropout == published.model.dropout
    assert (rgb.model.architecture, rgb.data.num_segments) == ("tsn", 3)
    assert (tsm.model.architecture, tsm.data.num_segments) == ("tsm", 8)
    tsn_flow = load_recipe("tsn-flow-ucf101")
    assert (flow.data.modality, flow.data.new_length) == ("flow", 5)
    assert flow.data.scales == tsn_flow.data.scales and flow.model.dropout == tsn_flow.model.dropout
    assert flow.train.first_conv_lr_mult == 5.0
    assert (flow.train.lr, flow.train.lr_reference_batch) == (0.005, 128)  # TSN's per clip
    assert flow.train.epochs == 110 and flow.train.decay_epochs == (70, 100)  # mmaction2's


@pytest.mark.parametrize("modality", ["rgb", "flow"])
def test_kavg_adaptive_recipe(modality):
    train = load_recipe(f"two-stream-kavg-adaptive-{modality}-ucf101").train
    assert (train.sync, train.kavg_steps) == ("kavg", 4)
    assert (train.batch_size, train.batch_growth, train.batch_growth_every) == (64, 2.0, 10)
    assert train.max_batch_size == 512
    assert train.lr_coupling == "constant"
    # TSN's rate per clip at B_0 = 64: its lr at batch 128 (the tsn recipe) x 64 / 128.
    tsn = load_recipe(f"tsn-{modality}-ucf101").train
    assert train.lr == pytest.approx(tsn.lr * train.batch_size / tsn.batch_size)


@pytest.mark.parametrize("modality", ["rgb", "tsm", "flow"])
def test_synthetic_recipes_fit_the_default_synthetic_frames(modality):
    recipe = load_recipe(f"synthetic-{modality}")
    assert recipe.model.backbone == "mobilenet_v2" and recipe.model.weights == "none"
    assert recipe.data.crop_size <= 96  # default synthetic frames are 128x96
    assert clip_spec(recipe, training=False).eval_scale_size <= 96
    assert recipe.data.flip is False  # a flip swaps MoveLeft and MoveRight
    assert recipe.model.partial_bn is False


# --- YAML round trip ----------------------------------------------------------------------


def _unusual_recipe() -> Recipe:
    return Recipe(
        name="unusual",
        description="quotes ' and \" and: colons",
        reference="first line\nsecond line: with a colon\n  indented third",
        data=DataConfig(modality="flow", new_length=5, scale_size=300, validation_split="none"),
        model=ModelConfig(weights="/data/weights/resnet50 notop.h5", partial_bn=None),
        train=TrainConfig(
            lr=1e-4,
            decay_epochs=(),
            clip_norm=None,
            batch_growth=1.5,
            batch_growth_every=3,
            max_batch_size=None,
            warmup_epochs=0.5,
        ),
        runtime=RuntimeConfig(steps_per_epoch=7, seed=12345),
    )


@pytest.mark.parametrize("name", [*sorted(EXPECTED_RECIPES), "<unusual>"])
def test_dump_and_load_round_trip(tmp_path, name):
    recipe = _unusual_recipe() if name == "<unusual>" else load_recipe(name)
    path = tmp_path / "recipe.yaml"
    dump_recipe(recipe, path)
    loaded = load_recipe(str(path))
    assert loaded == recipe
    assert recipe_to_yaml(loaded) == path.read_text()


def test_dump_replaces_atomically(tmp_path):
    path = tmp_path / "recipe.yaml"
    path.write_text("old")
    dump_recipe(load_recipe("tsn-rgb-ucf101"), path)
    assert load_recipe(path) == load_recipe("tsn-rgb-ucf101")
    assert [entry.name for entry in tmp_path.iterdir()] == ["recipe.yaml"]


def test_recipe_to_dict_is_plain():
    values = recipe_to_dict(load_recipe("tsn-rgb-ucf101"))
    assert list(values) == ["name", "description", "reference", "data", "model", "train", "runtime"]
    assert values["train"]["decay_epochs"] == [20, 41]
    assert yaml.safe_load(yaml.safe_dump(values)) == values


def test_partial_yaml_takes_defaults_and_the_file_name(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("train:\n  lr: 1e-4\n  decay_epochs: [5]\n")
    recipe = load_recipe(path)
    assert recipe.name == "mine"
    assert recipe.train.lr == pytest.approx(1e-4) and isinstance(recipe.train.lr, float)
    assert recipe.train.decay_epochs == (5,)
    assert recipe.data == DataConfig() and recipe.runtime == RuntimeConfig()


# --- loading errors -----------------------------------------------------------------------


def test_unknown_recipe_name_lists_the_builtins():
    with pytest.raises(ConfigError) as caught:
        load_recipe("tsn-rgb-ucf")
    message = str(caught.value)
    assert "tsn-rgb-ucf" in message and "did you mean tsn-rgb-ucf101" in message
    for name in EXPECTED_RECIPES:
        assert name in message


def test_missing_recipe_file(tmp_path):
    with pytest.raises(ConfigError, match=r"does not exist"):
        load_recipe(str(tmp_path / "nothing.yaml"))


def test_unknown_yaml_key_names_file_key_and_valid_keys(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\ntrain:\n  learning_rate: 0.1\n")
    with pytest.raises(ConfigError) as caught:
        load_recipe(path)
    message = str(caught.value)
    assert str(path) in message
    assert "train.learning_rate" in message
    assert "lr_coupling" in message and "batch_size" in message  # the valid keys


def test_unknown_section_names_file(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\noptimiser:\n  lr: 0.1\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: unknown top-level key 'optimiser'"):
        load_recipe(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("data:\n  num_segments: three\n", r"data\.num_segments='three'.*whole number"),
        ("data:\n  num_segments: 3.5\n", r"data\.num_segments=3\.5.*whole number"),
        ("data:\n  flip: 1\n", r"data\.flip=1.*true or false"),
        ("train:\n  decay_epochs: 30\n", r"train\.decay_epochs=30.*list of whole numbers"),
        ("train:\n  lr: fast\n", r"train\.lr='fast'.*a number"),
        ("model:\n  partial_bn: maybe\n", r"model\.partial_bn='maybe'.*true or false or null"),
        ("train: [1, 2]\n", r"section 'train' must be a mapping"),
        ("name: [1]\n", r"name=\[1\].*string"),
    ],
)
def test_wrong_type_in_yaml_names_key_value_and_type(tmp_path, text, expected):
    path = tmp_path / "typed.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=expected) as caught:
        load_recipe(path)
    assert str(path) in str(caught.value)


def test_invalid_yaml_names_file(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("train: {lr: [\n")
    with pytest.raises(ConfigError, match=r"broken\.yaml: not valid YAML"):
        load_recipe(path)


# --- overrides ----------------------------------------------------------------------------


def test_overrides_parse_and_coerce_types():
    recipe = apply_overrides(
        load_recipe("tsn-rgb-ucf101"),
        [
            "train.lr=1",
            "data.num_segments=8",
            "train.decay_epochs=[10,20]",
            "model.partial_bn=null",
            "train.clip_norm=null",
            "data.flip=false",
            "train.weight_decay=1e-4",
            "model.weights=/tmp/w.h5",
            "description=a test",
        ],
    )
    assert recipe.train.lr == 1.0 and isinstance(recipe.train.lr, float)
    assert recipe.data.num_segments == 8
    assert recipe.train.decay_epochs == (10, 20)
    assert recipe.model.partial_bn is None and recipe.train.clip_norm is None
    assert recipe.data.flip is False
    assert recipe.train.weight_decay == pytest.approx(1e-4)
    assert recipe.model.weights == "/tmp/w.h5"
    assert recipe.description == "a test"
    # Nothing else changed.
    original = load_recipe("tsn-rgb-ucf101")
    assert recipe.runtime == original.runtime
    assert recipe.train.batch_size == original.train.batch_size


def test_overrides_apply_in_order():
    recipe = apply_overrides(load_recipe("synthetic-rgb"), ["train.epochs=3", "train.epochs=4"])
    assert recipe.train.epochs == 4


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("train.lr", r"has no '='.*SECTION\.KEY=VALUE"),
        ("lr=0.1", r"'lr' is not SECTION\.KEY"),
        ("optimizer.lr=0.1", r"unknown section 'optimizer'; sections: data, model, train"),
        ("train.learning_rate=0.1", r"unknown key train\.learning_rate.*valid keys"),
        ("train.momentun=0.5", r"did you mean train\.momentum"),
        ("data.num_segments=eight", r"data\.num_segments='eight'.*whole number"),
        ("data.num_segments=8.0", r"data\.num_segments=8\.0.*whole number"),
        ("data.flip=1", r"data\.flip=1.*true or false"),
        ("train.decay_epochs=[10, x]", r"train\.decay_epochs=\[10, 'x'\]"),
        ("train.decay_epochs=[10,", r"not valid YAML"),
        ("data.modality=null", r"data\.modality=None.*a string"),
        ("name=", r"non-empty string"),
    ],
)
def test_bad_overrides_are_rejected_with_the_fix(setting, expected):
    with pytest.raises(ConfigError, match=expected) as caught:
        apply_overrides(load_recipe("tsn-rgb-ucf101"), [setting])
    assert repr(setting) in str(caught.value)


# --- validation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (["data.modality=depth"], r"data\.modality='depth'.*rgb, flow"),
        (["data.new_length=5"], r"data\.new_length=5.*RGB clips take one frame"),
        (["data.modality=flow", "data.new_length=0"], r"data\.new_length=0.*>= 1"),
        (["data.num_segments=0"], r"data\.num_segments=0"),
        (["data.sampling=random"], r"data\.sampling='random'.*tsn, dense"),
        (["data.scale_size=100"], r"data\.scale_size=100.*crop_size=224"),
        (["data.validation_split=train"], r"data\.validation_split='train'"),
        (["data.validation_split=test"], r"data\.validation_split='test'.*actrec eval"),
        (["data.validation_holdout=0.6"], r"data\.validation_holdout=0\.6.*\[0, 0\.5\]"),
        (
            ["data.validation_holdout=0.1", "data.validation_split=val"],
            r"data\.validation_split='val'.*validation_holdout=0\.1",
        ),
        (["train.loss_upper_bound=0"], r"train\.loss_upper_bound=0\.0"),
        (["train.loss_explosion_factor=1"], r"train\.loss_explosion_factor=1\.0.*> 1"),
        (["train.max_recoveries=-1"], r"train\.max_recoveries=-1"),
        (["train.recovery_lr_factor=0"], r"train\.recovery_lr_factor=0\.0.*\(0, 1\]"),
        (["model.architecture=i3d"], r"model\.architecture='i3d'.*tsn, tsm"),
        (["model.backbone=vgg16"], r"model\.backbone='vgg16'.*resnet50"),
        (
            ["model.backbone=test_mobilenet_v2", "model.partial_bn=false"],
            r"model\.weights='imagenet'.*test network with no ImageNet weights.*weights=none",
        ),
        (
            ["model.architecture=tsm", "model.backbone=inception_v3"],
            r"model\.backbone='inception_v3'.*TSM",
        ),
        (["model.dropout=1"], r"model\.dropout=1\.0.*\[0, 1\)"),
        (["model.shift_fraction=0.6"], r"model\.shift_fraction=0\.6"),
        (["model.shift_placement=inplace"], r"model\.shift_placement='inplace'.*blockres"),
        (["model.input_size=112"], r"model\.input_size=112.*crop_size=224"),
        (["model.weights=none"], r"model\.partial_bn=True.*partial_bn=false"),
        (["train.epochs=0"], r"train\.epochs=0"),
        (["train.batch_size=0"], r"train\.batch_size=0"),
        (["train.batch_growth=0.5"], r"train\.batch_growth=0\.5.*>= 1"),
        (["train.batch_growth=2"], r"train\.batch_growth_every=0.*batch_growth=2"),
        (["train.max_batch_size=64"], r"train\.max_batch_size=64.*batch_size=128"),
        (["train.lr=0"], r"train\.lr=0\.0"),
        (["train.lr_coupling=cubic"], r"train\.lr_coupling='cubic'.*constant, linear, sqrt"),
        (["train.warmup_epochs=200"], r"train\.warmup_epochs=200\.0"),
        (["train.decay=exponential"], r"train\.decay='exponential'.*step, cosine, none"),
        (["train.decay_epochs=[60,30]"], r"train\.decay_epochs=\[60, 30\].*increasing"),
        (["train.decay_epochs=[0,30]"], r"train\.decay_epochs=\[0, 30\]"),
        (["train.decay_factor=2"], r"train\.decay_factor=2\.0"),
        (["train.optimizer=lamb"], r"train\.optimizer='lamb'.*sgd, adam"),
        (["train.optimizer=adam", "train.nesterov=true"], r"train\.nesterov=True"),
        (["train.clip_norm=0"], r"train\.clip_norm=0\.0"),
        (
            ["train.weight_decay_mode=adamw"],
            r"train\.weight_decay_mode='adamw'.*coupled, decoupled",
        ),
        (["train.bias_lr_mult=0"], r"train\.bias_lr_mult=0\.0.*multiplier > 0"),
        (["train.first_conv_lr_mult=-5"], r"train\.first_conv_lr_mult=-5\.0"),
        (["train.classifier_lr_mult=0"], r"train\.classifier_lr_mult=0\.0"),
        (["train.sync=gossip"], r"train\.sync='gossip'.*allreduce, kavg"),
        (["train.sync=kavg", "train.kavg_steps=0"], r"train\.kavg_steps=0"),
        (["train.adam_state=shared"], r"train\.adam_state='shared'"),
        (["train.mixed_precision=float8"], r"train\.mixed_precision='float8'"),
        (["train.accumulation_steps=0"], r"train\.accumulation_steps=0"),
        (["train.max_per_replica_batch=0"], r"train\.max_per_replica_batch=0"),
        (["runtime.strategy=tpu"], r"runtime\.strategy='tpu'.*one-device"),
        (["runtime.communication=mpi"], r"runtime\.communication='mpi'.*ring, nccl"),
        (["runtime.keep_checkpoints=0"], r"runtime\.keep_checkpoints=0"),
        (["runtime.steps_per_epoch=0"], r"runtime\.steps_per_epoch=0"),
        (["runtime.log_every_steps=0"], r"runtime\.log_every_steps=0"),
    ],
)
def test_validate_names_key_value_and_what_is_allowed(settings, expected):
    recipe = apply_overrides(load_recipe("tsn-rgb-ucf101"), settings)
    with pytest.raises(ConfigError, match=expected):
        validate_recipe(recipe)


def test_a_recipe_file_without_the_newer_keys_loads_with_their_defaults(tmp_path):
    """Recipe files written before weight_decay_mode, the lr multipliers and more_fix_crop
    existed still load: coupled L2 (what a published weight_decay means), no multipliers,
    TSN's 13 crop positions."""
    path = tmp_path / "old.yaml"
    path.write_text(
        "name: old\ndata:\n  modality: rgb\n  scales: [1.0, 0.875]\n"
        "train:\n  weight_decay: 0.0005\n  clip_norm: 20.0\n"
    )
    recipe = load_recipe(path)
    validate_recipe(recipe)
    assert recipe.train.weight_decay_mode == "coupled"
    assert (
        recipe.train.bias_lr_mult,
        recipe.train.first_conv_lr_mult,
        recipe.train.classifier_lr_mult,
    ) == (1.0, 1.0, 1.0)
    assert recipe.data.more_fix_crop is True
    assert clip_spec(recipe, training=True).more_fix_crop is True


def test_validate_accepts_reasonable_changes():
    recipe = apply_overrides(
        load_recipe("tsn-rgb-ucf101"),
        [
            "train.batch_size=16",
            "train.batch_growth=2",
            "train.batch_growth_every=1",
            "train.max_batch_size=64",
            "train.decay=cosine",
            "train.warmup_epochs=2.5",
            "model.architecture=tsm",
            "model.partial_bn=null",
            "data.sampling=dense",
            "train.epochs=5",  # decay epochs past the end are allowed (they never happen)
        ],
    )
    validate_recipe(recipe)
    assert resolved_partial_bn(recipe.model) is False


def test_validate_catches_wrong_types_set_in_code():
    recipe = load_recipe("tsn-rgb-ucf101")
    bad = dataclasses.replace(recipe, train=dataclasses.replace(recipe.train, lr="fast"))
    with pytest.raises(ConfigError, match=r"train\.lr='fast'"):
        validate_recipe(bad)
    listed = dataclasses.replace(recipe, train=dataclasses.replace(recipe.train, decay_epochs=[1]))
    with pytest.raises(ConfigError, match=r"train\.decay_epochs"):
        validate_recipe(listed)


# --- derived values -----------------------------------------------------------------------


def test_partial_bn_resolution():
    assert resolved_partial_bn(ModelConfig(architecture="tsn")) is True
    assert resolved_partial_bn(ModelConfig(architecture="tsm")) is False
    assert resolved_partial_bn(ModelConfig(architecture="tsm", partial_bn=True)) is True


def test_clip_spec_follows_the_recipe():
    recipe = load_recipe("tsn-flow-ucf101")
    training = clip_spec(recipe, training=True)
    evaluation = clip_spec(recipe, training=False)
    assert training.modality == "flow" and training.new_length == 5
    assert training.channels == 10
    assert training.num_segments == 3 and training.crop_size == 224
    assert training.normalization == "none" and evaluation.normalization == "none"
    assert training.flip is True and evaluation.flip is False
    assert evaluation.eval_scale_size == 256
    dense = apply_overrides(
        load_recipe("tsm-kinetics400"), ["data.sampling=dense", "data.frame_interval=4"]
    )
    spec = clip_spec(dense, training=True)
    assert (spec.sampling, spec.frame_interval, spec.num_segments) == ("dense", 4, 8)


# --- one list of allowed values -------------------------------------------------------------


def test_backbone_choices_are_the_model_registry():
    """The config's backbone Literal (config imports no models) names the registry's entries,
    in its order, then its clip networks' sizes; the architectures are TSN, TSM and the
    clip families; TSM's backbones are those with a shift family."""
    from actrec.backbones.registry import BACKBONES, CLIP_FAMILIES, CLIP_NETWORKS
    from actrec.config.choices import ARCHITECTURES, BACKBONE_NAMES, SHIFTABLE_BACKBONES

    assert (*BACKBONES, *CLIP_NETWORKS) == BACKBONE_NAMES
    assert ("tsn", "tsm", *CLIP_FAMILIES) == ARCHITECTURES and "videomae" in ARCHITECTURES
    shiftable = tuple(name for name, spec in BACKBONES.items() if spec.shift_family is not None)
    assert shiftable == SHIFTABLE_BACKBONES


def test_components_take_their_choices_from_the_recipe_literals():
    """Each component's tuple of allowed values is the config's tuple, not a copy."""
    from actrec.cluster import strategy
    from actrec.config import choices
    from actrec.data.input import clip_spec as clip_spec_module
    from actrec.data.input import sampling
    from actrec.train.loop import optimizer
    from actrec.train.loop import trainer as loop

    # A clip is the recipe's data section: its choices are the section's Literals.
    assert issubclass(clip_spec_module.ClipSpec, DataConfig)
    with pytest.raises(
        ConfigError, match=r"data\.modality='depth' is not valid; choose one of: rgb, flow"
    ):
        clip_spec_module.ClipSpec("depth")
    assert sampling.SAMPLINGS is choices.SAMPLINGS
    # The loop and the optimizer take the recipe's train section, which actrec.config checks
    # (sync, mixed_precision, optimizer, adam_state, weight_decay_mode): no list of their own.
    listed = [value for value in vars(choices).values() if isinstance(value, tuple)]
    for component in (loop, optimizer):
        copies = [value for value in vars(component).values() if value in listed]
        assert not copies, (component.__name__, copies)
    assert strategy.STRATEGY_KINDS is choices.STRATEGIES
    assert strategy.COMMUNICATIONS is choices.COMMUNICATIONS
    assert choices.MODALITIES == ("rgb", "flow") and choices.SYNCS == ("allreduce", "kavg")


def test_config_imports_neither_data_nor_models():
    import subprocess
    import sys

    code = (
        "import sys, actrec.config\n"
        "from actrec.config.files import load_recipe\n"
        "from actrec.config.validate import validate_recipe\n"
        "validate_recipe(load_recipe('tsm-kinetics400'))\n"
        "print(sorted(m for m in sys.modules if m.startswith(('actrec.data', 'actrec.models'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("recipe", "settings", "match"),
    [
        (
            "synthetic-tsm",
            ["train.distill_features=maps"],
            r"train\.distill_features=maps matches the maps of one backbone layer: name it "
            r"with train\.distill_layer",
        ),
        (
            "synthetic-tsm",
            ["train.distill_layer=block_2_add"],
            r"train\.distill_layer='block_2_add' names the layer whose maps "
            r"train\.distill_features=maps matches, and distill_features is 'clip'",
        ),
        (
            "synthetic-tsm-mars",
            ["train.distill_features=logits"],
            r"distill_features is 'logits'; set train\.distill_features=maps, or drop the layer",
        ),
    ],
)
def test_the_hint_layer_rule_is_the_recipes_own_check(recipe, settings, match):
    """distill_features "maps" <-> distill_layer is a rule of the recipe alone: refused when
    the recipe is read, before any teacher or data is looked at (issue 53: checked once)."""
    with pytest.raises(ConfigError, match=match):
        validate_recipe(apply_overrides(load_recipe(recipe), settings))
    validate_recipe(load_recipe("synthetic-tsm-mars"))  # maps with its layer
