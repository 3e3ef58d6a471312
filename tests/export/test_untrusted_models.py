"""An export a user is handed is untrusted until checked: `actrec predict` reads a SavedModel's
ops, a TFLite file's operators and an ONNX file's external data as data, and actrec.json
against its schema, before anything is loaded or run; what an actrec export never holds is
refused in one line, nothing is executed or written (--trust-model runs it anyway)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from refusal_harness import first_video as _first_video
from refusal_harness import one_line as _one_line

from actrec.export.trust.savedmodel_ops import SIGNATURE_OPS, disallowed_ops, graph_def_ops

HOSTILE_NOTE = "owned.txt"


def _hostile_savedmodel(source: Path, folder: Path, note: Path, op: str = "WriteFile") -> Path:
    """`source`'s actrec.json, classes and recipe beside a SavedModel whose serving signature
    returns plausible probabilities and writes `note` (WriteFile) or saves a checkpoint
    (SaveV2) as it does."""
    import tensorflow as tf

    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("saved_model.pb", "variables"))
    classes = len(json.loads((source / "actrec.json").read_text())["classes"])

    class Hostile(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec(None, tf.uint8, name="frames")])
        def serve(self, frames):
            if op == "WriteFile":
                tf.io.write_file(str(note), "written by a shared model")
            else:
                tf.raw_ops.SaveV2(
                    prefix=str(note), tensor_names=["x"], shape_and_slices=[""], tensors=[[1.0]]
                )
            batch = tf.shape(frames)[:1]
            probabilities = tf.fill(tf.concat([batch, [classes]], 0), 1.0 / classes)
            top = tf.math.top_k(probabilities, 5)
            return {
                "probabilities": probabilities,
                "top_k_indices": top.indices,
                "top_k_probabilities": top.values,
                "top_k_classes": tf.fill(tf.shape(top.indices), "x"),
            }

    module = Hostile()
    tf.saved_model.save(module, str(folder), signatures={"serving_default": module.serve})
    return folder


def test_every_savedmodel_variant_actrec_exports_needs_only_the_allowed_ops(
    tiny_exports, tiny_online
):
    """The suite's exports (one stream of each modality, two streams fused, the streaming
    step): a new variant that needs a new op fails here, naming it
    (tests/export/derive_savedmodel_ops.py derives SIGNATURE_OPS for every backbone)."""
    from tensorflow.core.protobuf import saved_model_pb2

    for folder in [*tiny_exports.values(), tiny_online["export"]]:
        assert disallowed_ops(folder) == [], folder
        saved = saved_model_pb2.SavedModel()
        saved.ParseFromString((folder / "saved_model.pb").read_bytes())
        # the allowed list is what the exports use, and the saver's ops are not in it
        assert {"SaveV2", "RestoreV2"} <= graph_def_ops(saved.meta_graphs[0].graph_def)
    assert not {"SaveV2", "RestoreV2", "WriteFile", "ReadFile", "PyFunc"} & SIGNATURE_OPS


@pytest.mark.parametrize("op", ["WriteFile", "SaveV2"])
def test_a_savedmodel_that_would_act_is_refused_before_it_is_loaded(
    op, tiny_runs, tiny_exports, tiny_online, tmp_path, cli_runner
):
    note = tmp_path / HOSTILE_NOTE
    hostile = _hostile_savedmodel(tiny_exports["rgb"], tmp_path / "shared", note, op)
    before = {path: path.read_bytes() for path in hostile.rglob("*") if path.is_file()}
    video = _first_video(tiny_runs)
    for extra in ([], ["--timeline"]):
        line = _one_line(cli_runner("predict", video, "--model", hostile, *extra))
        assert f"the model runs {op}" in line and "--trust-model" in line, line
        assert "actrec export never does" in line
    # a streaming export's folder is checked the same way
    streaming = tmp_path / "shared-streaming"
    shutil.copytree(hostile, streaming)
    shutil.copy(tiny_online["export"] / "actrec.json", streaming / "actrec.json")
    line = _one_line(cli_runner("predict", video, "--model", streaming, "--stream"))
    assert f"the model runs {op}" in line
    assert not note.exists() and not Path(f"{note}.index").exists()
    assert {path: path.read_bytes() for path in hostile.rglob("*") if path.is_file()} == before
    if op == "WriteFile":  # the user who trusts its author runs it: the check was the guard
        result = cli_runner("predict", video, "--model", hostile, "--trust-model")
        assert result.exit_code == 0, result.output
        assert note.read_text() == "written by a shared model"


def test_a_tflite_file_with_tensorflow_ops_or_damaged_is_refused(tiny_runs, tmp_path, cli_runner):
    """A Flex operator (any TensorFlow op, here WriteFile) and a cut file: refused by name."""
    import tensorflow as tf

    from actrec.export.writer import export_runs

    export = tmp_path / "lite"
    export_runs([tiny_runs["rgb"]], export, model_format="tflite")
    note = tmp_path / HOSTILE_NOTE

    @tf.function(input_signature=[tf.TensorSpec([1, 2, 32, 32, 3], tf.float32, name="frames")])
    def serve(frames):
        tf.io.write_file(str(note), "written")
        logits = tf.reduce_mean(frames, axis=[1, 2, 3, 4])[:, None] * tf.ones([1, 8])
        return {"probabilities": tf.nn.softmax(logits), "logits": logits}

    converter = tf.lite.TFLiteConverter.from_concrete_functions([serve.get_concrete_function()])
    converter.target_spec.supported_ops = [
        tf.lite.OpsSet.TFLITE_BUILTINS,
        tf.lite.OpsSet.SELECT_TF_OPS,
    ]
    hostile = tmp_path / "hostile"
    shutil.copytree(export, hostile)
    (hostile / "model.tflite").write_bytes(converter.convert())
    video = _first_video(tiny_runs)
    line = _one_line(cli_runner("predict", video, "--model", hostile))
    assert "TensorFlow (Flex) operators FlexWriteFile" in line and "--trust-model" in line
    assert not note.exists()
    cut = tmp_path / "cut"
    shutil.copytree(export, cut)
    content = (export / "model.tflite").read_bytes()
    (cut / "model.tflite").write_bytes(content[: len(content) // 3])
    line = _one_line(cli_runner("predict", video, "--model", cut))
    assert "model.tflite is not a readable TFLite model" in line
    line = _one_line(cli_runner("predict", video, "--model", cut, "--trust-model"))
    assert "cannot load" in line and "model.tflite" in line


def test_an_onnx_file_reading_data_outside_its_folder_is_refused(tiny_runs, tmp_path, cli_runner):
    import onnx

    from actrec.export.writer import export_runs

    export = tmp_path / "onnx"
    export_runs([tiny_runs["rgb"]], export, model_format="onnx")
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.arange(64, dtype=np.float32).tobytes())
    model = onnx.load(str(export / "model.onnx"))
    tensor = max(model.graph.initializer, key=lambda t: len(t.raw_data))
    tensor.ClearField("raw_data")
    tensor.data_location = onnx.TensorProto.EXTERNAL
    del tensor.external_data[:]
    tensor.external_data.add(key="location", value="../secret.bin")
    onnx.save(model, str(export / "model.onnx"))
    line = _one_line(cli_runner("predict", _first_video(tiny_runs), "--model", export))
    assert "'../secret.bin', outside its folder" in line and "--trust-model" in line


def _edited_metadata(source: Path, folder: Path, edit) -> Path:
    shutil.copytree(source, folder)
    metadata = json.loads((folder / "actrec.json").read_text())
    edit(metadata)
    (folder / "actrec.json").write_text(json.dumps(metadata))
    return folder


@pytest.mark.parametrize(
    ("name", "edit", "expected"),
    [
        ("no-streams", lambda m: m.pop("streams"), "field 'streams' should be a list"),
        ("classes", lambda m: m.update(classes="abc"), "field 'classes' should be a non-empty"),
        (
            "outside",
            lambda m: m["streams"][0].update(recipe_file="../../outside.yaml"),
            "field 'streams[0].recipe_file' should be a plain file name inside the export",
        ),
        (
            "absolute",
            lambda m: m.update(model="/etc/model.tflite"),
            "field 'model' should be a plain file name",
        ),
        (
            "segments",
            lambda m: m["streams"][0].update(num_segments="8"),
            "field 'streams[0].num_segments' should be a whole number >= 1, not '8'",
        ),
    ],
)
def test_a_malformed_actrec_json_is_refused_naming_the_field(
    name, edit, expected, tiny_runs, tiny_exports, tmp_path, cli_runner
):
    folder = _edited_metadata(tiny_exports["rgb"], tmp_path / name, edit)
    line = _one_line(cli_runner("predict", _first_video(tiny_runs), "--model", folder))
    assert f"{folder / 'actrec.json'}: {expected}" in line, line


def test_a_start_or_teacher_naming_a_recipe_outside_its_folder_is_refused(
    tiny_runs, tiny_exports, tmp_path, cli_runner
):
    """--init-from / --distill-from an export read its recipe: only one inside the folder."""
    outside = tmp_path / "outside.yaml"
    shutil.copy(tiny_exports["flow"] / "recipe.yaml", outside)
    for source, option, recipe in (
        ("rgb", "--init-from", "synthetic-rgb"),
        ("flow", "--distill-from", "synthetic-tsm-mars"),
    ):
        folder = _edited_metadata(
            tiny_exports[source],
            tmp_path / f"{source}-export",
            lambda m: m["streams"][0].update(recipe_file="../outside.yaml"),
        )
        result = cli_runner(
            "train", "--recipe", recipe, "--data", tiny_runs["prepared"],
            "--workdir", tmp_path / f"run-{source}", option, folder,
        )  # fmt: skip
        line = _one_line(result)
        assert "streams[0].recipe_file" in line and "inside the export folder" in line, line
        assert not (tmp_path / f"run-{source}").exists()
