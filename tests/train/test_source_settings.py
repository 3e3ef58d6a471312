"""A run started from another (`--init-from`): the settings without weights it takes from
the source, and the differences from the source's training it prints and records
(actrec.train.start.source_settings). Recipes only: nothing is trained."""

from __future__ import annotations

import dataclasses

import pytest

from actrec.config.files import dump_recipe, load_recipe
from actrec.config.overrides import apply_overrides, overridden_settings
from actrec.config.recipe import SHIFT_SETTINGS, ModelConfig
from actrec.errors import ConfigError
from actrec.runs.record import RunRecord, weights_license, write_run_record
from actrec.train.start.source_settings import (
    INHERITED_SETTINGS,
    source_settings,
    with_inherited,
    with_recorded_inheritance,
)
from actrec.train.start.starting_point import StartingPoint

# What the issue ran: finetune-tsm on the quickstart's network (synthetic-tsm: MobileNetV2,
# 48 px, 4 segments, 1/4 of the channels shifted each way, no flips, scale 48).
QUICKSTART_NETWORK = ["model.backbone=mobilenet_v2", "data.crop_size=48"]


def _settings(recipe_name: str, given: list[str], source: str = "synthetic-tsm", **source_sets):
    """source_settings of `recipe_name` with the command line's `given` --set values, against
    `source` with `source_sets` ("section.key" -> value) applied."""
    source_recipe = apply_overrides(
        load_recipe(source), [f"{key}={value}" for key, value in source_sets.items()]
    )
    recipe = apply_overrides(load_recipe(recipe_name), given)
    return recipe, source_settings(recipe, source_recipe, overridden_settings(given))


def _by_setting(items) -> dict:
    return {item.setting: item for item in items}


def test_the_source_shift_is_inherited_over_the_recipe_file_and_said():
    recipe, settings = _settings("finetune-tsm", QUICKSTART_NETWORK)
    assert recipe.model.shift_fraction == 0.125  # the recipe file's value does not count
    (inherited,) = settings.inherited
    assert (inherited.setting, inherited.value, inherited.recipe_value) == (
        "model.shift_fraction",
        0.25,
        0.125,
    )
    assert with_inherited(recipe, settings.inherited).model.shift_fraction == 0.25
    assert settings.lines()[0] == (
        "model.shift_fraction: 0.25 from the source, which trained with it (the recipe says "
        "0.125; --set model.shift_fraction=0.125 to use that)"
    )
    assert "model.shift_fraction" not in _by_setting(settings.differences)


def test_a_shift_given_by_hand_is_kept_with_a_warning():
    given = [*QUICKSTART_NETWORK, "model.shift_fraction=0.125", "model.shift_placement=block"]
    _, settings = _settings("finetune-tsm", given)
    assert settings.inherited == ()
    differences = _by_setting(settings.differences)
    for setting, value, source_value in (
        ("model.shift_fraction", 0.125, 0.25),
        ("model.shift_placement", "block", "blockres"),
    ):
        difference = differences[setting]
        assert (difference.value, difference.source_value) == (value, source_value)
        assert difference.line().startswith(f"warning: {setting}: {value} (the source trained")
        assert f"--set {setting}={source_value} keeps the source's" in difference.warning


def test_the_same_shift_given_by_hand_is_neither_inherited_nor_warned():
    _, settings = _settings("finetune-tsm", [*QUICKSTART_NETWORK, "model.shift_fraction=0.25"])
    assert settings.inherited == ()
    assert "model.shift_fraction" not in _by_setting(settings.differences)


@pytest.mark.parametrize("source_architecture", ["tsn", "tsm"])
def test_tsn_and_tsm_start_each_other_without_shift_settings(source_architecture):
    """A TSN's shift settings mean nothing: a TSM from a TSN keeps the recipe's shift, and
    a TSN from a TSM has none to take."""
    target = "tsn" if source_architecture == "tsm" else "tsm"
    given = [*QUICKSTART_NETWORK, f"model.architecture={target}", "data.num_segments=4"]
    recipe, settings = _settings(
        "finetune-tsm",
        given,
        **{"model.architecture": source_architecture, "model.shift_fraction": 0.5},
    )
    assert settings.inherited == ()
    shift_settings = {"model.shift_fraction", "model.shift_placement", "model.shift_direction"}
    assert not shift_settings & set(_by_setting(settings.differences))
    assert with_inherited(recipe, settings.inherited) == recipe


def test_other_segments_are_warned_for_a_tsm_and_said_for_a_tsn():
    _, tsm = _settings("finetune-tsm", QUICKSTART_NETWORK)
    segments = _by_setting(tsm.differences)["data.num_segments"]
    assert (segments.value, segments.source_value) == (8, 4)
    assert segments.line() == (
        "warning: data.num_segments: 8 (the source trained with 4): each temporal shift mixes "
        "frames further apart or closer than the loaded weights learned with (--set "
        "data.num_segments=4 keeps the source's)"
    )
    _, tsn = _settings("finetune-tsn-rgb", QUICKSTART_NETWORK, source="synthetic-rgb")
    segments = _by_setting(tsn.differences)["data.num_segments"]
    assert (segments.value, segments.source_value, segments.warning) == (3, 4, None)
    assert segments.line() == "data.num_segments: 3 (the source trained with 4)"


def test_the_view_and_flips_that_differ_are_said_without_a_warning():
    _, settings = _settings("finetune-tsm", QUICKSTART_NETWORK)
    differences = _by_setting(settings.differences)
    assert differences["data.flip"].line() == "data.flip: true (the source trained with false)"
    # finetune-tsm's scale_size is TSN's default, 48 * 256 / 224 = 55; the source's 48
    assert differences["data.scale_size"].line() == (
        "data.scale_size: 55 (the source trained with 48)"
    )
    assert differences["data.flip"].warning is None
    assert differences["data.scale_size"].warning is None
    matched = [*QUICKSTART_NETWORK, "data.num_segments=4", "data.scale_size=48", "data.flip=false"]
    _, settings = _settings("finetune-tsm", matched)
    assert settings.differences == ()
    assert [line for line in settings.lines() if line.startswith("warning")] == []
    _, settings = _settings("finetune-tsm", [*matched, "data.scales=[1.0,0.875]"])
    assert [line for line in settings.lines() if "scales" in line] == [
        "data.scales: [1,0.875] (the source trained with [1,0.875,0.75,0.66])"
    ]


def test_the_preprocessing_is_inherited_and_one_given_by_hand_warned():
    _, settings = _settings("finetune-tsm", QUICKSTART_NETWORK, **{"model.preprocessing": "tsm"})
    assert _by_setting(settings.inherited)["model.preprocessing"].value == "tsm"
    # a source that names its backbone's own preprocessing computes what the recipe's does
    _, settings = _settings("finetune-tsm", QUICKSTART_NETWORK, **{"model.preprocessing": "tf"})
    assert "model.preprocessing" not in _by_setting((*settings.inherited, *settings.differences))
    given = [*QUICKSTART_NETWORK, "model.preprocessing=torch"]
    _, settings = _settings("finetune-tsm", given, **{"model.preprocessing": "tsm"})
    assert "model.preprocessing" not in _by_setting(settings.inherited)
    assert _by_setting(settings.differences)["model.preprocessing"].warning.startswith(
        "given by hand; the loaded weights see frames normalised otherwise"
    )


def test_a_flow_model_from_an_rgb_one_is_warned():
    given = [*QUICKSTART_NETWORK, "data.modality=flow", "data.new_length=5"]
    _, settings = _settings("finetune-tsm", given)
    modality = _by_setting(settings.differences)["data.modality"]
    assert modality.line().startswith(
        "warning: data.modality: flow (the source trained with rgb): the first convolution is "
        "made by cross-modality initialisation"
    )


def test_the_record_round_trips_and_a_resumed_run_reuses_what_it_inherited(tmp_path):
    recipe, settings = _settings("finetune-tsm", [*QUICKSTART_NETWORK, "data.scales=[1.0]"])
    start = StartingPoint(
        "/runs/tsm", "run", "synthetic-tsm", "tsm", "mobilenet_v2", "rgb", 8, True, 0, settings
    )
    record = start.to_json()
    assert record["inherited"] == [
        {"setting": "model.shift_fraction", "value": 0.25, "recipe_value": 0.125}
    ]
    assert {"setting": "data.flip", "value": True, "source_value": False, "warning": None} in (
        record["differences"]
    )
    assert StartingPoint.from_json(record) == start
    earlier = {key: value for key, value in record.items() if key not in settings.to_json()}
    assert StartingPoint.from_json(earlier).settings.lines() == []  # recorded before them

    run_record = RunRecord(initialised_from=record)
    assert with_recorded_inheritance(recipe, run_record).model.shift_fraction == 0.25
    given = {"model.shift_fraction"}
    assert with_recorded_inheritance(recipe, run_record, given).model.shift_fraction == 0.125
    assert with_recorded_inheritance(recipe, RunRecord()) == recipe


def test_resuming_with_the_command_that_started_the_run_is_not_refused(tmp_path):
    """`actrec train --recipe finetune-tsm --init-from SOURCE --resume` gives the recipe file's
    shift; the run's recipe.yaml holds the source's, which run.json records as inherited."""
    from actrec.cluster.strategy import ClusterInfo
    from actrec.train.life.resume import open_run_directory

    recipe, settings = _settings("finetune-tsm", QUICKSTART_NETWORK)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    dump_recipe(with_inherited(recipe, settings.inherited), run_dir / "recipe.yaml")
    start = StartingPoint("/s", "run", "synthetic-tsm", "tsm", "mobilenet_v2", "rgb", 8, True)
    start = StartingPoint(**{**start.__dict__, "settings": settings})
    write_run_record(run_dir, RunRecord(classes=(), initialised_from=start.to_json()))
    chief = ClusterInfo(1, 0, True, "local")
    resumed, has_run, _ = open_run_directory(None, recipe, chief, run_dir, "latest")
    assert has_run and resumed.model.shift_fraction == 0.25
    given = ["model.shift_fraction=0.125"]
    by_hand = apply_overrides(recipe, given)
    with pytest.raises(ConfigError, match=r"model.shift_fraction: 0.25 -> 0.125"):
        open_run_directory(None, by_hand, chief, run_dir, "latest", overridden_settings(given))


def test_the_settings_given_on_the_command_line_are_named_by_section_and_key():
    given = ["model.shift_fraction=0.125", "data.num_segments=8", "name=mine"]
    assert overridden_settings(given) == {"model.shift_fraction", "data.num_segments", "name"}


def test_the_backbone_comes_from_the_source_and_another_input_size_is_warned():
    """finetune-tsm names torchvision's ResNet50; started from the quickstart's MobileNetV2
    without --set model.backbone, the run is a MobileNetV2 (the loaded weights are one). A
    crop of another size is allowed (no weight holds a size) and warned."""
    recipe, settings = _settings("finetune-tsm", ["data.crop_size=64"])
    inherited = _by_setting(settings.inherited)
    assert recipe.model.backbone == "resnet50_torchvision"
    assert inherited["model.backbone"].value == "mobilenet_v2"
    assert with_inherited(recipe, settings.inherited).model.backbone == "mobilenet_v2"
    crop = _by_setting(settings.differences)["data.crop_size"]
    assert (crop.value, crop.source_value) == (64, 48)
    assert crop.line().startswith("warning: data.crop_size: 64 (the source trained with 48)")
    assert "--set data.crop_size=48 keeps the source's" in crop.line()


def test_the_shift_settings_are_said_once_beside_the_model_s_fields():
    """actrec.config.recipe.SHIFT_SETTINGS (read here and by actrec.published) is exactly the
    model section's shift fields: a new one is inherited by an --init-from start."""
    fields = [field.name for field in dataclasses.fields(ModelConfig)]
    shift_fields = {f"model.{name}" for name in fields if name.startswith("shift_")}
    assert len(set(SHIFT_SETTINGS)) == len(SHIFT_SETTINGS) and set(SHIFT_SETTINGS) == shift_fields
    assert set(SHIFT_SETTINGS) <= set(INHERITED_SETTINGS)


@pytest.mark.parametrize(
    ("recipe_name", "given"),
    [("finetune-tsm-online", []), ("finetune-tsm", ["model.shift_direction=online"])],
)
def test_a_bidirectional_source_made_online_is_a_supported_change(recipe_name, given):
    """The recipe file's online direction counts (it is written for streaming), as the
    command line's does; the change is a note, not a warning, and the rest is inherited."""
    recipe, settings = _settings(recipe_name, [*QUICKSTART_NETWORK, *given])
    assert "model.shift_direction" not in _by_setting(settings.inherited)
    assert _by_setting(settings.inherited)["model.shift_fraction"].value == 0.25
    kept = with_inherited(recipe, settings.inherited)
    assert (kept.model.shift_direction, kept.model.shift_fraction) == ("online", 0.25)
    difference = _by_setting(settings.differences)["model.shift_direction"]
    assert difference.warning is None
    assert difference.line() == (
        "model.shift_direction: online (the source trained with bidirectional): the shift "
        "becomes online (each frame takes channels from earlier frames only, so the model runs "
        "frame by frame: `actrec export --streaming`); the shift holds no weights, so every "
        "weight carries over: fine-tune to recover what the one-way shift costs"
    )


def test_an_online_source_stays_online_and_made_bidirectional_by_hand_is_warned():
    _, settings = _settings(
        "finetune-tsm", QUICKSTART_NETWORK, **{"model.shift_direction": "online"}
    )
    assert _by_setting(settings.inherited)["model.shift_direction"].value == "online"
    given = [*QUICKSTART_NETWORK, "model.shift_direction=bidirectional"]
    _, settings = _settings("finetune-tsm", given, **{"model.shift_direction": "online"})
    difference = _by_setting(settings.differences)["model.shift_direction"]
    assert difference.line().startswith("warning: model.shift_direction: bidirectional")


def test_the_published_weights_license_follows_a_chain_of_fine_tunings():
    """A run converted from published weights, a run started from it and one started from
    that all name the published weights' license (the exports' cards print it); a run of
    actrec's own weights names none; a recorded starting point keeps it."""
    converted = RunRecord(converted_from={"license": "CC-BY-NC-4.0 (the weights' card)"})
    assert weights_license(converted) == "CC-BY-NC-4.0 (the weights' card)"
    start = StartingPoint(
        path="runs/converted", kind="run", recipe="converted", architecture="videomae",
        backbone="videomae_b", modality="rgb", num_classes=400, keeps_classifier=False,
        weights_license=weights_license(converted),
    )  # fmt: skip
    tuned = RunRecord(initialised_from=start.to_json())
    assert weights_license(tuned) == "CC-BY-NC-4.0 (the weights' card)"
    assert StartingPoint.from_json(start.to_json()) == start
    assert weights_license(RunRecord()) is None
    assert weights_license(RunRecord(initialised_from={"path": "runs/mine"})) is None
