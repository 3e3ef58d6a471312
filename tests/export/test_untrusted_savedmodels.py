"""An untrusted SavedModel is not run by TensorFlow's loader (issue 65): `actrec predict`
rebuilds the serving function from the folder's recipe and reads its variables as data
(actrec.export.trust.savedmodel_rebuild), and a saved_model.pb that would act if TensorFlow
loaded it is refused, by what the TF2 loader calls rather than by the labels the file
writes (actrec.export.trust.savedmodel_ops). Each hostile SavedModel below keeps a real export's
actrec.json, recipe and variables (tests/export/hostile_savedmodels.py builds them)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from hostile_savedmodels import copy_checkpoint, merge_into, op_name_call, relabelled, save_to
from hostile_savedmodels import tf1_saver as tf1
from refusal_harness import first_video as _first_video
from refusal_harness import one_line as _one_line


def _files(folder: Path) -> dict:
    return {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def _refused_everywhere(cli_runner, video, folder: Path, expected: str) -> None:
    """predict on files and with --timeline: one line naming `expected`, exit != 0."""
    for extra in ([], ["--timeline"]):
        line = _one_line(cli_runner("predict", video, "--model", folder, *extra))
        assert expected in line and "--trust-model" in line, line


@pytest.mark.parametrize("act", ["save", "merge", "copy"])
def test_a_tf1_savedmodel_whose_restore_op_acts_is_refused(
    act, tiny_runs, tiny_exports, tmp_path, cli_runner
):
    """No object graph: TensorFlow would load it as TF1 and run its saver's restore op,
    here a function that writes a checkpoint outside the folder, moves another export's
    variables away, or copies an outside checkpoint's content."""
    victim = tmp_path / "victim"
    shutil.copytree(tiny_exports["flow"], victim)
    victim_prefix = victim / "variables" / "variables"
    target = tmp_path / "TARGET"
    body = {
        "save": save_to(target),
        "merge": merge_into([victim_prefix], target),
        "copy": copy_checkpoint(
            victim_prefix, "model_variables/0/.ATTRIBUTES/VARIABLE_VALUE", target
        ),
    }[act]
    hostile = tf1(tiny_exports["rgb"], tmp_path / "shared", body)
    before, victim_before = _files(hostile), _files(victim)
    _refused_everywhere(cli_runner, _first_video(tiny_runs), hostile, "TF1-style SavedModel")
    assert not list(tmp_path.glob("TARGET*"))
    assert _files(hostile) == before and _files(victim) == victim_before


def test_a_tf1_savedmodel_refused_for_stream_and_acting_when_trusted(
    tiny_runs, tiny_exports, tiny_online, tmp_path, cli_runner
):
    """The artefact is real: TensorFlow's loader (--trust-model) runs its restore op and
    writes TARGET.index; without it neither --stream nor the Python API loads it."""
    from actrec.errors import UntrustedModelError
    from actrec.predict.video_files import ExportedModel

    target = tmp_path / "TARGET"
    streaming = tf1(tiny_online["export"], tmp_path / "streaming", save_to(target))
    line = _one_line(
        cli_runner("predict", _first_video(tiny_runs), "--model", streaming, "--stream")
    )
    assert "TF1-style SavedModel" in line
    hostile = tf1(tiny_exports["rgb"], tmp_path / "shared", save_to(target))
    with pytest.raises(UntrustedModelError, match="TF1-style"):
        ExportedModel(hostile)
    assert not list(tmp_path.glob("TARGET*"))
    ExportedModel(hostile, trust_model=True)
    assert Path(f"{target}.index").is_file()


@pytest.mark.parametrize("build", [relabelled, op_name_call], ids=["relabelled", "op-name"])
def test_a_tf2_savedmodel_whose_signature_acts_is_refused_whatever_its_labels(
    build, tiny_runs, tiny_exports, tiny_online, tmp_path, cli_runner
):
    """The signature's wrapper calls a function holding SaveV2: the node that called the
    wrapper deleted and the saver's restore node given a func attribute naming it, or the
    call made by op name. The TF2 loader calls the object graph's concrete functions, so
    SaveV2 is found where they reach, whatever the graph nodes say."""
    target = tmp_path / "TARGET"
    hostile = build(tiny_exports["rgb"], tmp_path / "shared", save_to(target))
    before = _files(hostile)
    video = _first_video(tiny_runs)
    _refused_everywhere(cli_runner, video, hostile, "the model runs SaveV2")
    streaming = build(tiny_online["export"], tmp_path / "streaming", save_to(target))
    line = _one_line(cli_runner("predict", video, "--model", streaming, "--stream"))
    assert "the model runs SaveV2" in line
    assert not list(tmp_path.glob("TARGET*"))
    assert _files(hostile) == before
    if build is relabelled:  # the artefact is real: a call of its signature writes
        from actrec.predict.video_files import ExportedModel

        model = ExportedModel(hostile, trust_model=True)
        model.probabilities(model.video_inputs(video))
        assert Path(f"{target}.index").is_file()


def test_every_savedmodel_export_predicts_rebuilt_as_tensorflow_loads_it(
    tiny_runs, tiny_exports, tiny_online, monkeypatch
):
    """Without --trust-model the probabilities (and the streaming step's logits and states)
    are those of the SavedModel loaded by TensorFlow, and TensorFlow's loader is not called
    (it raises here)."""
    import tensorflow as tf

    from actrec.predict.stream import StreamingModel
    from actrec.predict.video_files import ExportedModel

    video = _first_video(tiny_runs)
    loaded = {
        name: ExportedModel(folder, trust_model=True) for name, folder in tiny_exports.items()
    }
    inputs = {name: model.video_inputs(video) for name, model in loaded.items()}
    expected = {name: model.probabilities(inputs[name]) for name, model in loaded.items()}
    frames = np.random.default_rng(0).integers(0, 256, (3, 60, 80, 3), dtype=np.uint8)
    trusted_stream = StreamingModel(tiny_online["export"], trust_model=True)
    expected_logits = [trusted_stream.step(frame) for frame in frames]

    def refuse(*args, **kwargs):
        raise AssertionError("tf.saved_model.load was called on an untrusted export")

    monkeypatch.setattr(tf.saved_model, "load", refuse)
    for name, folder in tiny_exports.items():
        rebuilt = ExportedModel(folder).probabilities(inputs[name])
        np.testing.assert_allclose(rebuilt, expected[name], rtol=0, atol=1e-6, err_msg=name)
    stream = StreamingModel(tiny_online["export"])
    for frame, logits in zip(frames, expected_logits, strict=True):
        np.testing.assert_allclose(stream.step(frame), logits, rtol=0, atol=1e-5)


def test_variables_of_another_export_are_refused_in_one_line(
    tiny_runs, tiny_exports, tmp_path, cli_runner
):
    """variables/ swapped for the flow export's: the rebuilt network's names and shapes
    refuse them; TensorFlow's loader (--trust-model) raises its own error, also one
    line."""
    swapped = tmp_path / "swapped"
    shutil.copytree(tiny_exports["rgb"], swapped)
    shutil.rmtree(swapped / "variables")
    shutil.copytree(tiny_exports["flow"] / "variables", swapped / "variables")
    video = _first_video(tiny_runs)
    line = _one_line(cli_runner("predict", video, "--model", swapped))
    assert f"{swapped}: its variables do not fit its recipe" in line, line
    line = _one_line(cli_runner("predict", video, "--model", swapped, "--trust-model"))
    assert f"{swapped}: cannot load its model (" in line and "export the model again" in line


def test_an_object_graph_id_out_of_range_is_refused_in_one_line(
    tiny_runs, tiny_exports, tmp_path, cli_runner
):
    """A child id of 10^6: the check refuses it by name; TensorFlow's loader
    (--trust-model) raises IndexError, which becomes one line."""
    from tensorflow.core.protobuf import saved_model_pb2

    damaged = tmp_path / "damaged"
    shutil.copytree(tiny_exports["rgb"], damaged)
    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString((damaged / "saved_model.pb").read_bytes())
    saved.meta_graphs[0].object_graph_def.nodes[0].children[0].node_id = 10**6
    (damaged / "saved_model.pb").write_bytes(saved.SerializeToString())
    video = _first_video(tiny_runs)
    line = _one_line(cli_runner("predict", video, "--model", damaged))
    assert "saved_model.pb refers to object 1000000, which it does not hold" in line, line
    line = _one_line(cli_runner("predict", video, "--model", damaged, "--trust-model"))
    assert f"{damaged}: cannot load its model (IndexError" in line, line


def test_variables_linked_outside_the_folder_are_refused(tiny_runs, tiny_exports, tmp_path):
    from actrec.errors import ActrecError
    from actrec.predict.video_files import ExportedModel

    linked = tmp_path / "linked"
    shutil.copytree(tiny_exports["rgb"], linked, ignore=shutil.ignore_patterns("variables"))
    (linked / "variables").symlink_to(tiny_exports["rgb"] / "variables")
    with pytest.raises(ActrecError, match="outside"):
        ExportedModel(linked)
