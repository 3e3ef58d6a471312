"""actrec's Keras MoViNet against tf-models-official's own MovinetClassifier: references
with every variable drawn from a seed (ReZero scales included), written by the Model
Garden in its own environment as checkpoints (model/ keys, model/ and backbone/ keys, a
backbone alone) and a SavedModel's variables/, kept as tests/assets/movinet-reference and
written again here with the Model Garden's very values (tests/movinet_reference.py), read
back by actrec, converted and compared on two fixed clips: the logits, the difference
between the two clips' logits (a random MoViNet's logits barely depend on the clip), the
backbone's endpoints, and each stream's frame-by-frame logits."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from movinet_reference import (
    ASSET,
    asset_manifest,
    reference_file,
    write_checkpoint,
    written_references,
)
from movinet_reference_values import drawn_value, tensor_digest, writer_digest

from actrec.backbones.movinet.build import endpoint_model, movinet_classifier
from actrec.backbones.movinet.checkpoint_files import read_movinet_variables
from actrec.backbones.movinet.convert import assign_weights, converted_classifier, source_weights
from actrec.backbones.movinet.spec import MOVINET_SPECS, stream_settings
from actrec.backbones.movinet.stream import initial_states, stream_state_shapes, stream_step
from actrec.errors import ConfigError, WeightsError
from actrec.published.class_lists import published_class_names

TOLERANCE = 1e-5
ENDPOINTS = ("stem", "block0_layer0", "block2_layer0", "block4_layer0", "head")
CASES = ("a0_base", "a0_stream", "a1_base", "a1_stream", "a2_base", "a2_stream", "a3_stream")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def references(tmp_path_factory):
    """(folder, name -> case) of the Model Garden's references, written again from the
    asset (a few seconds)."""
    return written_references(tmp_path_factory.mktemp("movinet-reference"))


def test_the_asset_is_the_current_writers():
    assert asset_manifest()["writer"] == writer_digest(), (
        "tests/assets/movinet-reference was written by another version of "
        "tests/backbones/movinet_reference_writer.py or tests/movinet_reference_values.py: "
        "write it again with `python tests/movinet_reference.py`"
    )


def test_a_tensor_that_is_not_the_model_gardens_is_refused(tmp_path):
    """The asset's digests are checked: a value drawn again that differs from what the
    Model Garden wrote stops the suite instead of testing against other weights."""
    shape = [3, 3, 8]
    digest = tensor_digest(drawn_value(5, "stem/stem/conv3d/kernel", shape))
    record = {"tensors": {"key": ["stem/stem/conv3d/kernel", shape, digest]}, "others": {}}
    write_checkpoint(tmp_path / "right" / "ckpt-1", record, b"", seed=5)
    assert (tmp_path / "right" / "ckpt-1.index").is_file()
    with pytest.raises(AssertionError, match="key drawn again is not the Model Garden's"):
        write_checkpoint(tmp_path / "wrong" / "ckpt-1", record, b"", seed=6)
    assert not (tmp_path / "wrong").exists()


def converted(path, clips: np.ndarray):
    """(actrec's network for the file at `path`, the SourceWeights), the settings the
    file's layout publishes (3D: base, (2+1)D: stream)."""
    return converted_classifier(path, num_frames=clips.shape[1], image_size=clips.shape[2:4])


def test_the_block_tables_are_the_model_gardens():
    theirs = json.loads((ASSET / "block_specs.json").read_text())
    for name, spec in MOVINET_SPECS.items():
        blocks = theirs[name.removeprefix("movinet_")]
        stem, *stages, head = (values for _, values in blocks)
        assert (stem["filters"], stem["kernel_size"], stem["strides"]) == (
            spec.stem_filters,
            [1, 3, 3],
            [1, 2, 2],
        )
        assert (head["project_filters"], head["head_filters"]) == (
            spec.project_filters,
            spec.head_filters,
        )
        mine = [dataclasses.asdict(stage) for stage in spec.stages]
        assert json.loads(json.dumps(mine)) == stages, name


@pytest.mark.parametrize("name", CASES)
def test_a_model_garden_checkpoint_converts_to_the_same_network(references, name):
    folder, cases = references
    case = cases[name]
    expected = np.load(folder / name / "outputs.npz")
    clips = expected["clips"]
    network, weights = converted(reference_file(folder, case, "model"), clips)
    assert weights.spec.name == f"movinet_{case['model_id']}" and weights.num_classes == 7
    assert weights.settings.causal == case["settings"]["causal"]
    assert weights.settings.positional_encoding == case["settings"]["use_positional_encoding"]
    logits = np.asarray(network(clips))
    reference = expected["logits"]
    np.testing.assert_allclose(logits, reference, atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose(
        logits[0] - logits[1], reference[0] - reference[1], atol=TOLERANCE, rtol=0
    )
    assert np.abs(reference[0] - reference[1]).max() > 100 * TOLERANCE  # the clips matter
    endpoints = endpoint_model(network)(clips)
    for endpoint in ENDPOINTS:  # the Model Garden's endpoint, sampled at fixed places
        theirs, at = expected[f"endpoint_{endpoint}"], expected[f"endpoint_{endpoint}_at"]
        ours = np.asarray(endpoints[endpoint])
        assert ours.size == np.prod(expected[f"endpoint_{endpoint}_shape"]), endpoint
        ours = ours.reshape(-1)[at]
        scale = max(1.0, float(np.abs(theirs).max()))
        np.testing.assert_allclose(ours, theirs, atol=TOLERANCE * scale, rtol=0, err_msg=endpoint)
    if case["settings"]["causal"]:  # the stream, frame by frame: the Model Garden's and ours
        step, states = stream_step(network), initial_states(network, len(clips))
        for index in range(clips.shape[1]):
            frame_logits, states = step(clips[:, index : index + 1], states)
            np.testing.assert_allclose(
                np.asarray(frame_logits),
                expected["stream_logits"][:, index],
                atol=TOLERANCE,
                rtol=0,
            )
        np.testing.assert_allclose(np.asarray(frame_logits), logits, atol=1e-6, rtol=0)


FILES = (("a0_base", "model"), ("a0_base", "model_backbone"), ("a0_base", "backbone"),
         ("a0_stream", "model"), ("a0_stream", "savedmodel"))  # fmt: skip


@pytest.fixture(scope="module")
def a0_variables(references):
    folder, cases = references
    return {
        (name, kind): read_movinet_variables(reference_file(folder, cases[name], kind))
        for name, kind in FILES
    }


@pytest.mark.parametrize(
    "name, kind",
    [("a0_base", "model_backbone"), ("a0_base", "backbone"), ("a0_stream", "savedmodel")],
)
def test_every_kind_of_file_names_the_same_tensors(a0_variables, name, kind):
    """model/ and backbone/ keys (the Model Garden's checkpoint items), the backbone alone
    and a SavedModel's variables/ (tf_keras's save_model, as the TF Hub files): the arrays
    of model/ keys for every layer."""
    model = source_weights(a0_variables[name, "model"], "model")
    other = source_weights(a0_variables[name, kind], kind)
    assert other.num_classes == (0 if kind == "backbone" else 7)
    assert a0_variables[name, kind].kind == ("savedmodel" if kind == "savedmodel" else "checkpoint")
    expected = set(model.arrays) - (
        {"classifier", "classifier_hidden"} if kind == "backbone" else set()
    )
    assert set(other.arrays) == expected
    for path in expected:
        for ours, theirs in zip(model.arrays[path], other.arrays[path], strict=True):
            np.testing.assert_array_equal(ours, theirs, err_msg=f"{kind} {path}")


def test_a_savedmodel_converts_to_the_same_logits_and_states(references):
    folder, cases = references
    expected = np.load(folder / "a0_stream" / "outputs.npz")
    path = reference_file(folder, cases["a0_stream"], "savedmodel")
    network, _ = converted(path, expected["clips"])
    np.testing.assert_allclose(
        np.asarray(network(expected["clips"])), expected["logits"], atol=TOLERANCE, rtol=0
    )
    theirs = {
        name: tuple(shape[1:])
        for name, shape in cases["a0_stream"]["state_shapes"].items()
        if not name.endswith("frame_count")
    }
    ours = stream_state_shapes(network)
    assert ours.pop("state_frame_count") == (1,)
    assert ours == theirs  # the Model Garden's stream buffers, by name and shape


def _refusal(variables, tensors) -> str:
    with pytest.raises(WeightsError) as refused:
        source_weights(dataclasses.replace(variables, tensors=tensors), "movinet.ckpt")
    return str(refused.value)


def test_a_file_that_does_not_fit_is_refused_naming_the_tensor(a0_variables):
    variables = a0_variables["a0_base", "model"]
    tensors = dict(variables.tensors)
    rezero = "layer_with_weights-0/layer_with_weights-3/_mobile_bottleneck/_rezero/scale"
    missing = {key: value for key, value in tensors.items() if key != rezero}
    assert _refusal(variables, missing) == (
        f"movinet.ckpt: tensor {rezero} is missing (a MoViNet file has it)"
    )
    extra = {**tensors, "layer_with_weights-0/layer_with_weights-3/_extra/kernel": np.ones(3)}
    assert "1 variables do not belong to a movinet_a0 classifier " in _refusal(variables, extra)
    assert "_extra/kernel" in _refusal(variables, extra)
    kernel = "layer_with_weights-0/layer_with_weights-2/_feature/_conv/kernel"
    broken = {**tensors, kernel: np.full_like(tensors[kernel], np.nan)}
    assert _refusal(variables, broken).startswith(f"movinet.ckpt: tensor {kernel} has non-finite")
    reshaped = {**tensors, kernel: tensors[kernel][:, :, :, :, :-1]}
    weights = source_weights(dataclasses.replace(variables, tensors=reshaped), "movinet.ckpt")
    network = movinet_classifier(
        weights.spec, 7, weights.settings, num_frames=2, image_size=(32, 32)
    )
    with pytest.raises(WeightsError, match=f"^{kernel}: shape"):
        assign_weights(network, weights)


def test_a_tsm_file_or_another_networks_checkpoint_is_no_movinet(tmp_path):
    import tensorflow as tf

    pth = tmp_path / "TSM_kinetics_RGB_mobilenetv2_shift8_blockres_avg_segment8_e100_dense.pth"
    pth.write_bytes(b"PK\x03\x04 a torch zip")
    with pytest.raises(
        WeightsError, match=r"\.pth: not a TensorFlow checkpoint \(.*\.index is missing\)"
    ):
        read_movinet_variables(pth)
    other = tf.Module()
    other.dense = tf.Module()
    other.dense.kernel = tf.Variable(np.ones((2, 2), np.float32))
    prefix = tf.train.Checkpoint(model=other).write(str(tmp_path / "other" / "ckpt-1"))
    variables = read_movinet_variables(prefix)
    with pytest.raises(
        WeightsError, match="not a MoViNet checkpoint: it has no layer_with_weights-0/"
    ):
        source_weights(variables, prefix)


def test_a_converted_stream_is_a_run_with_the_sources_classes_and_license(references, tmp_path):
    """`actrec pretrained convert`'s MoViNet path: a run folder whose weights are the
    file's, the class list checked against the classifier (kinetics600, the default, has
    600 names: refused for 7, nothing written), the license in run.json."""
    import keras

    from actrec.published.movinet_convert import convert_movinet_file

    folder, cases = references
    path = reference_file(folder, cases["a0_stream"], "model")
    with pytest.raises(ConfigError, match="600"):
        convert_movinet_file(path, tmp_path / "refused")
    assert not (tmp_path / "refused").exists()
    classes = tmp_path / "classes.txt"
    classes.write_text("".join(f"action {index}\n" for index in range(7)))
    conversion = convert_movinet_file(path, tmp_path / "run", str(classes))
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["converted_from"]["license"] == "Apache-2.0"
    assert (
        record["classes"][-1] == "action 6"
        and conversion.recipe.model.backbone == "movinet_a0_stream"
    )
    assert (conversion.recipe.data.num_segments, conversion.recipe.data.crop_size) == (50, 172)
    # how its videos are prepared, so `export` and `predict` need no --data (a converted
    # MoViNet asked for it until run.json said)
    assert record["prepare_settings"]["frame_size"] == "256"
    from actrec.export.checks import export_preparation
    from actrec.runs.trained import load_trained_run

    assert export_preparation([load_trained_run(tmp_path / "run")], None)["frame_size"] == "256"
    expected = np.load(folder / "a0_stream" / "outputs.npz")
    network = movinet_classifier(
        MOVINET_SPECS["movinet_a0"], 7, stream_settings("movinet_a0"), num_frames=6,
        image_size=(36, 44), preprocessing=keras.layers.Identity(name="preprocessing"),
    )  # fmt: skip
    network.load_weights(tmp_path / "run" / "final.weights.h5")
    logits = np.asarray(network(expected["clips"] * 255.0))  # a run takes frames in [0, 255]
    np.testing.assert_allclose(logits, expected["logits"], atol=TOLERANCE, rtol=0)


def test_the_kinetics600_list_is_the_model_gardens_label_map():
    names = published_class_names("kinetics600")
    assert len(names) == len(set(names)) == 600
    assert names[:3] == ("abseiling", "acting in play", "adjusting glasses")
    assert names[-3:] == ("yawning", "yoga", "zumba")
