"""`actrec pretrained convert`: a PyTorch reference network of each published layout, written
with the source's module names (tests/published/torch_reference*.py), random weights and BatchNorm
statistics, saved in the source's file format and converted through the CLI, computes what
the converted run's model computes: logits and pooled features on the same frames within a
relative difference of 1e-4 (float32)."""

from __future__ import annotations

import json
from dataclasses import replace

import keras
import numpy as np
import pytest
import torch
import torch_reference as reference
from card_harness import assert_cards_give_the_runs_outputs
from tiny_recipe import TINY_RUN_SETTINGS

from actrec.runs.folder import RECIPE_FILE, RUN_FILE
from actrec.runs.trained import load_trained_run, without_pretrained_weights

TOLERANCE = 1e-4


def relative_difference(ours: np.ndarray, theirs: np.ndarray) -> float:
    return float(np.abs(ours - theirs).max() / np.abs(theirs).max())


def random_frames(batch: int, segments: int, side: int, channels: int = 3, seed: int = 0):
    """[B, T, side, side, C] in 0-255, as stored (RGB, or quantised flow)."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (batch, segments, side, side, channels)).astype("float32")


def converted_outputs(run_dir, frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(logits [B, K], pooled features [B*T, F]) of the converted run's network on `frames`
    (rebuilt for their size and count: no weight depends on either)."""
    from actrec.models.factory import build_model

    run = load_trained_run(run_dir)
    recipe = without_pretrained_weights(run.recipe)
    _, segments, side = frames.shape[:3]
    recipe = replace(recipe, data=replace(recipe.data, crop_size=side, num_segments=segments))
    model = build_model(recipe.model, recipe.data, run.num_classes)
    model.load_weights(str(run.weights_path))
    outputs = keras.Model(model.input, [model.output, model.get_layer("dropout").output])
    logits, features = outputs(frames, training=False)
    return keras.ops.convert_to_numpy(logits), keras.ops.convert_to_numpy(features)


def convert(cli_runner, checkpoint, out, *options):
    result = cli_runner("pretrained", "convert", checkpoint, "--out", out, *options)
    assert result.exit_code == 0, result.output
    return result


def assert_same_network(run_dir, model, frames) -> None:
    expected_logits, expected_features = reference.reference_outputs(model, frames)
    assert expected_logits.std() >= 1  # a classifier whose logits spread
    logits, features = converted_outputs(run_dir, frames)
    assert relative_difference(features, expected_features) <= TOLERANCE
    assert relative_difference(logits, expected_logits) <= TOLERANCE


def test_tsm_resnet50_rgb_8_segments_converts_to_the_same_network(cli_runner, tmp_path):
    model = reference.randomise_(reference.tsm_resnet(400, 8), seed=1)
    checkpoint = reference.save_tsm(model, tmp_path, with_optimizer=True)
    assert checkpoint.name == "TSM_kinetics_RGB_resnet50_shift8_blockres_avg_segment8_e50.pth"
    result = convert(cli_runner, checkpoint, tmp_path / "run")
    assert_same_network(tmp_path / "run", model, random_frames(1, 8, 32))
    recipe = load_trained_run(tmp_path / "run").recipe
    assert (recipe.model.architecture, recipe.model.backbone) == ("tsm", "resnet50_torchvision")
    assert (recipe.model.shift_fraction, recipe.model.shift_placement) == (0.125, "blockres")
    assert (recipe.data.num_segments, recipe.model.preprocessing) == (8, "tsm")
    record = json.loads((tmp_path / "run" / RUN_FILE).read_text())
    source = record["converted_from"]
    assert source["layout"] == "tsm" and source["file_format"] == "legacy"
    assert source["sha256"] == reference._sha256(checkpoint)
    assert source["settings"]["num_segments"] == {"value": 8, "from": "file name"}
    assert record["classes"][:2] == ["abseiling", "air drumming"]  # kinetics400, TSM's order
    assert record["prepare_settings"]["frame_size"] == "331"  # TSM's Kinetics frames
    assert "num_segments" in result.output and "file name" in result.output


@pytest.mark.parametrize("is_shift", [True, False], ids=["tsm", "tsn"])
def test_tsm_repository_flow_models_convert_with_their_flow_normalisation(
    cli_runner, tmp_path, is_shift
):
    model = reference.randomise_(
        reference.tsm_resnet(400, 3, modality="Flow", is_shift=is_shift), seed=2
    )
    checkpoint = reference.save_tsm(model, tmp_path)
    convert(cli_runner, checkpoint, tmp_path / "run")
    assert_same_network(tmp_path / "run", model, random_frames(1, 3, 32, channels=10))
    run = load_trained_run(tmp_path / "run")
    assert (run.recipe.data.modality, run.recipe.data.new_length) == ("flow", 5)
    assert run.recipe.model.architecture == ("tsm" if is_shift else "tsn")
    assert run.prepare_settings["flow"] == "tvl1"


@pytest.mark.parametrize(
    ("architecture", "modality"), [("tsn", "rgb"), ("tsm", "rgb"), ("tsn", "flow")]
)
def test_mmaction2_recognisers_convert_to_the_same_network(
    cli_runner, tmp_path, architecture, modality
):
    model = reference.randomise_(
        reference.mmaction_recognizer(400, 3, architecture=architecture, modality=modality),
        seed=3,
    )
    checkpoint = reference.save_mmaction(model, tmp_path)
    convert(cli_runner, checkpoint, tmp_path / "run")
    channels = 10 if modality == "flow" else 3
    assert_same_network(tmp_path / "run", model, random_frames(2, 3, 32, channels=channels))
    recipe = load_trained_run(tmp_path / "run").recipe
    assert (recipe.model.architecture, recipe.data.modality) == (architecture, modality)
    assert recipe.model.preprocessing == "mmaction2"


def test_torchvision_resnet50_converts_as_an_imagenet_classifier(cli_runner, tmp_path):
    model = reference.randomise_(reference.torchvision_resnet(50), seed=4)
    checkpoint = reference.save_torchvision(model, tmp_path)
    result = convert(cli_runner, checkpoint, tmp_path / "run", "--segments", "1")
    assert_same_network(tmp_path / "run", model, random_frames(2, 1, 32))
    assert "ImageNet classifier" in " ".join(result.output.split())


def test_torchvision_file_installs_as_the_imagenet_start_of_its_backbone(tmp_path, monkeypatch):
    """`actrec pretrained import resnet50-0676ba61.pth`: checked against the SHA-256 prefix
    its name carries, converted once into the store; a backbone then built from
    `imagenet` computes torchvision's features."""
    import dataclasses

    from actrec.backbones import registry
    from actrec.backbones.weight_install import import_weights
    from actrec.errors import WeightsError
    from actrec.models.segment_model import build_segment_model, segment_backbone
    from actrec.published.imagenet import convert_imagenet_file

    model = reference.randomise_(reference.torchvision_resnet(50), seed=5)
    checkpoint = reference.save_torchvision(model, tmp_path)
    store = tmp_path / "store"
    with pytest.raises(WeightsError, match="does not start with 0676ba61"):
        import_weights(checkpoint, directory=store, convert=convert_imagenet_file)
    assert not (store / "resnet50_torchvision_notop.weights.h5").exists()
    # The test's random file has its own digest: the registry is told it (as a mirror's).
    spec = registry.BACKBONES["resnet50_torchvision"]
    prefix = reference._sha256(checkpoint)[:8]
    patched = dataclasses.replace(spec, weights=dataclasses.replace(spec.weights, file_hash=prefix))
    monkeypatch.setitem(registry.BACKBONES, "resnet50_torchvision", patched)
    installed = import_weights(checkpoint, directory=store, convert=convert_imagenet_file)
    assert installed.name == "resnet50_torchvision_notop.weights.h5"
    monkeypatch.setenv("ACTREC_PRETRAINED", str(store))
    network = build_segment_model(
        "resnet50_torchvision", 5, num_segments=1, input_size=32, weights="imagenet"
    )
    frames = random_frames(2, 1, 32)
    _, expected = reference.reference_outputs(model, frames)
    x = network.get_layer("preprocessing")(frames)[:, 0]
    features = keras.ops.convert_to_numpy(segment_backbone(network)(x, training=False))
    assert relative_difference(features, expected) <= TOLERANCE


def test_online_demo_mobilenet_streams_the_reference_outputs_frame_by_frame(cli_runner, tmp_path):
    import tensorflow as tf

    model = reference.randomise_(reference.online_mobilenet_v2(27), seed=6)
    checkpoint = reference.save_online_demo(model, tmp_path)
    result = convert(cli_runner, checkpoint, tmp_path / "run")
    recipe = load_trained_run(tmp_path / "run").recipe
    assert (recipe.model.architecture, recipe.model.shift_direction) == ("tsm", "online")
    assert (recipe.model.backbone, recipe.data.crop_size) == ("mobilenet_v2_tsm", 224)
    assert "jester" in result.output  # the online demo's 27 classes
    export = cli_runner("export", tmp_path / "run", "--streaming", "--out", tmp_path / "export")
    assert export.exit_code == 0, export.output
    card = (tmp_path / "export" / "MODEL_CARD.md").read_text()
    assert "converted from the published PyTorch file `mobilenetv2_jester_online.pth.tar`" in card
    # Frames at the evaluation scale (256): the serving graph's resize keeps them, its centre
    # crop takes the 224 pixels the reference sees.
    frames = np.random.default_rng(7).integers(0, 256, (4, 256, 256, 3)).astype("uint8")
    crop = frames[:, 16:240, 16:240].astype("float32")
    with torch.no_grad():
        expected = model.step_frames(reference.source_inputs(model, crop[None])).numpy()
    signature = tf.saved_model.load(str(tmp_path / "export")).signatures["serving_default"]
    states_spec = json.loads((tmp_path / "export" / "actrec.json").read_text())["streaming"]
    state = {s["input"]: np.zeros([1, *s["shape"][1:]], np.float32) for s in states_spec["states"]}
    streamed = []
    for frame in frames:
        out = signature(frame=tf.constant(frame[None]), **state)
        state = {name: out[name].numpy() for name in state}
        streamed.append(out["logits"].numpy()[0])
    assert expected.std() >= 1
    assert relative_difference(np.array(streamed), expected) <= TOLERANCE


# --- bad input: a clear error, nothing written ----------------------------------------------


@pytest.fixture(scope="module")
def tsm_mobilenet_checkpoint(tmp_path_factory):
    """A TSM MobileNetV2 (8 classes, 2 segments) in TSM's file format."""
    folder = tmp_path_factory.mktemp("tsm-mobilenet")
    model = reference.randomise_(reference.tsm_mobilenet_v2(8, 2), seed=8)
    return model, reference.save_tsm(model, folder)


def refused(cli_runner, checkpoint, out, *options) -> str:
    result = cli_runner("pretrained", "convert", checkpoint, "--out", out, *options)
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    return " ".join(result.output.split())


def test_bad_checkpoints_are_refused_by_name_and_nothing_is_written(
    cli_runner, tmp_path, tsm_mobilenet_checkpoint
):
    _, checkpoint = tsm_mobilenet_checkpoint
    out = tmp_path / "run"
    text = tmp_path / "notes.pth"
    text.write_text("not a checkpoint\n")
    assert "notes.pth" in refused(cli_runner, text, out)
    truncated = tmp_path / checkpoint.name
    truncated.write_bytes(checkpoint.read_bytes()[: checkpoint.stat().st_size // 2])
    assert "truncated" in refused(cli_runner, truncated, out).lower()
    # 8 classes, and the name says Kinetics (400): the list does not fit the classifier
    message = refused(cli_runner, checkpoint, out)
    assert "400 names" in message and "8 outputs" in message
    short_list = tmp_path / "classes.txt"
    short_list.write_text("a\nb\nc\n")
    assert "3 names" in refused(cli_runner, checkpoint, out, "--classes", short_list)
    assert not out.exists()
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".")] == []


def test_a_state_dict_of_another_architecture_names_missing_and_unexpected_modules(
    cli_runner, tmp_path, tsm_mobilenet_checkpoint
):
    _, checkpoint = tsm_mobilenet_checkpoint
    state = torch.load(checkpoint, weights_only=True)["state_dict"]
    for parameter in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked"):
        del state[f"module.base_model.features.18.1.{parameter}"]
    del state["module.base_model.features.17.conv.7.bias"]
    state["module.base_model.features.19.0.weight"] = torch.zeros(8, 8, 1, 1)
    other = tmp_path / "other.pth"
    torch.save({"state_dict": state}, other)
    message = refused(cli_runner, other, tmp_path / "run", "--classes", _class_file(tmp_path))
    assert "1 layers have no tensors (Conv_1_bn)" in message
    assert "1 modules have no layer (features.19.0)" in message
    assert "1 modules lack tensors (features.17.conv.7 without bias)" in message
    assert not (tmp_path / "run").exists()


def test_an_existing_out_folder_is_left_untouched(cli_runner, tmp_path, tsm_mobilenet_checkpoint):
    _, checkpoint = tsm_mobilenet_checkpoint
    out = tmp_path / "run"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    assert "already exists" in refused(cli_runner, checkpoint, out)
    assert [path.name for path in out.iterdir()] == ["mine.txt"]


def _class_file(folder, names=None):
    from actrec.data.synthetic.config import SYNTHETIC_CLASSES

    path = folder / "synthetic-classes.txt"
    path.write_text("\n".join(names or SYNTHETIC_CLASSES) + "\n")
    return path


# --- a converted model fine-tunes, exports and predicts --------------------------------------


def test_converted_model_fine_tunes_exports_and_predicts(
    cli_runner, tmp_path, tsm_mobilenet_checkpoint, tiny_runs
):
    """The chain a user runs, on a small backbone: convert (the tiny set's 8 classes) ->
    `train --init-from` (classifier kept; other classes: a new one) -> export (SavedModel,
    TFLite) -> predict."""
    _model, checkpoint = tsm_mobilenet_checkpoint
    prepared = tiny_runs["prepared"]
    classes = json.loads((prepared / "manifest.json").read_text())["classes"]
    converted = tmp_path / "converted"
    reversed_classes = _class_file(tmp_path, classes[::-1])
    convert(cli_runner, checkpoint, converted, "--classes", reversed_classes)
    assert (converted / RECIPE_FILE).is_file()
    # Its classes are the data's in reverse order: `--init-from` matches them by name.
    # The tiny runs' settings but the backbone (the source's is inherited) and a BatchNorm
    # momentum of 0 (one step's statistics would replace the converted ones).
    settings = [
        setting
        for setting in TINY_RUN_SETTINGS
        if not setting.startswith(("model.backbone=", "model.batch_norm_momentum="))
    ]
    arguments = ["train", "--recipe", "synthetic-tsm", "--data", prepared]
    for setting in settings:
        arguments += ["--set", setting]
    tuned = tmp_path / "tuned"
    result = cli_runner(*arguments, "--workdir", tuned, "--init-from", converted)
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "classifier kept (the same classes, rows reordered by name)" in output
    assert "model.backbone: mobilenet_v2_tsm from the source" in output
    assert "model.shift_fraction: 0.125 from the source" in output
    for model_format in ("savedmodel", "tflite"):
        out = tmp_path / f"export-{model_format}"
        exported = cli_runner("export", tuned, "--format", model_format, "--out", out)
        assert exported.exit_code == 0, exported.output
    video = next((tiny_runs["raw"]).rglob("*.avi"))
    predicted = cli_runner("predict", video, "--model", tmp_path / "export-savedmodel", "--json")
    assert predicted.exit_code == 0, predicted.output
    (prediction,) = json.loads(predicted.output[predicted.output.index("[") :])
    assert prediction["error"] is None and prediction["top_k"][0]["class"] in classes
    # The cards of the fine-tuned run's exports and of the converted model's Keras export
    # run in a fresh process and give those runs' outputs.
    assert (
        cli_runner("export", converted, "--format", "keras", "--out", tmp_path / "k").exit_code == 0
    )
    folders = [tmp_path / "export-savedmodel", tmp_path / "export-tflite", tmp_path / "k"]
    compared = assert_cards_give_the_runs_outputs(folders, tmp_path)
    assert compared == {("savedmodel", 1, False), ("tflite", 1, False), ("keras", 1, False)}
    online = reference.randomise_(reference.online_mobilenet_v2(27), seed=9)
    jester = convert(cli_runner, reference.save_online_demo(online, tmp_path), tmp_path / "j")
    assert jester.exit_code == 0
    new_head = cli_runner(
        *arguments, "--workdir", tmp_path / "tuned-j", "--init-from", tmp_path / "j"
    )
    assert new_head.exit_code == 0, new_head.output
    assert "classifier new (other classes)" in " ".join(new_head.output.split())
