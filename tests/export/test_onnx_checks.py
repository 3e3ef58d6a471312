"""actrec's own check of an ONNX file (actrec.export.trust.onnx_checks), before ONNX Runtime loads
anything: external data wherever a tensor can be (a Constant's sparse_value, a local
function's body, ...) stays inside the folder, and every operator is one actrec's exports
use (issue 65)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from refusal_harness import one_line as _one_line

from actrec.errors import UntrustedModelError
from actrec.export.trust.onnx_checks import (
    ONNX_DOMAIN,
    ONNX_OPS,
    check_onnx_file,
    onnx_operators,
    read_onnx_model,
)


@pytest.fixture(scope="module")
def onnx_exports(tiny_runs, tiny_online, tmp_path_factory) -> dict:
    """ONNX exports of the tiny RGB run (clip) and of the tiny online TSM (streaming)."""
    from actrec.export.writer import export_runs

    folder = tmp_path_factory.mktemp("onnx-checks")
    export_runs([tiny_runs["rgb"]], folder / "clip", model_format="onnx")
    export_runs([tiny_online["run"]], folder / "streaming", model_format="onnx", streaming=True)
    return {"clip": folder / "clip", "streaming": folder / "streaming"}


def _external(tensor, location: str) -> None:
    """Make `tensor` read its bytes from `location` (ONNX external data)."""
    import onnx

    tensor.ClearField("raw_data")
    tensor.ClearField("float_data")
    tensor.ClearField("int64_data")
    tensor.data_location = onnx.TensorProto.EXTERNAL
    del tensor.external_data[:]
    tensor.external_data.add(key="location", value=location)


def _sparse_constant(location: str):
    """A Constant node whose sparse_value's values are stored at `location`."""
    import onnx
    from onnx import helper

    values = helper.make_tensor("values", onnx.TensorProto.FLOAT, [4], [1.0, 2.0, 3.0, 4.0])
    indices = helper.make_tensor("indices", onnx.TensorProto.INT64, [4], [0, 1, 2, 3])
    _external(values, location)
    sparse = helper.make_sparse_tensor(values, indices, [16])
    return helper.make_node("Constant", [], ["hostile_sparse"], sparse_value=sparse)


def _local_function(location: str):
    """A model-local function whose body's Constant reads its value from `location`."""
    import onnx
    from onnx import helper

    value = helper.make_tensor("value", onnx.TensorProto.FLOAT, [16], np.zeros(16))
    _external(value, location)
    body = helper.make_node("Constant", [], ["out"], value=value)
    return helper.make_function(
        "hostile.local", "Read", [], ["out"], [body], [helper.make_opsetid("", 17)]
    )


def _edited(source: Path, folder: Path, edit) -> Path:
    shutil.copytree(source, folder)
    model = read_onnx_model(folder / "model.onnx")
    edit(model)
    (folder / "model.onnx").write_bytes(model.SerializeToString())
    return folder


def test_the_onnx_exports_use_only_the_allowed_operators(onnx_exports):
    """A new variant that needs a new operator fails here, naming it
    (tests/export/derive_onnx_ops.py derives ONNX_OPS for every backbone and opset)."""
    for folder in onnx_exports.values():
        operators = onnx_operators(read_onnx_model(folder / "model.onnx"))
        assert {domain for domain, _ in operators} == {ONNX_DOMAIN}, folder
        assert {op for _, op in operators} <= ONNX_OPS, sorted(operators)
        check_onnx_file(folder / "model.onnx")


@pytest.mark.parametrize("where", ["sparse-constant", "local-function"])
@pytest.mark.parametrize("location", ["absolute", "parent", "link"])
def test_external_data_outside_the_folder_is_refused_wherever_it_is(
    where, location, onnx_exports, tiny_runs, tmp_path, cli_runner
):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.arange(16, dtype=np.float32).tobytes())
    named = {"absolute": str(secret), "parent": "../secret.bin", "link": "weights.bin"}[location]

    def edit(model):
        if where == "sparse-constant":
            model.graph.node.append(_sparse_constant(named))
        else:
            model.functions.append(_local_function(named))

    hostile = _edited(onnx_exports["clip"], tmp_path / "shared", edit)
    if location == "link":
        (hostile / "weights.bin").symlink_to(secret)
    with pytest.raises(UntrustedModelError, match="outside its folder"):
        check_onnx_file(hostile / "model.onnx")
    video = next(Path(tiny_runs["raw"]).rglob("*.avi"))
    line = _one_line(cli_runner("predict", video, "--model", hostile))
    if location == "link":  # the folder's own link check (every file read) may answer first
        assert "outside" in line and "weights.bin" in line, line
    else:
        assert f"reads tensor data from {named!r}, outside its folder" in line, line
        assert "--trust-model" in line


def test_a_custom_domain_operator_or_a_local_function_call_is_refused(
    onnx_exports, tiny_runs, tmp_path, cli_runner
):
    from onnx import helper

    def custom(model):
        model.graph.node.append(helper.make_node("Run", [], ["hostile"], domain="com.hostile"))
        model.opset_import.append(helper.make_opsetid("com.hostile", 1))

    def local_call(model):
        function = _local_function("inside.bin")
        model.functions.append(function)
        model.graph.node.append(helper.make_node("Read", [], ["hostile"], domain="hostile.local"))

    for name, edit, expected in (
        ("custom", custom, "com.hostile:Run"),
        ("local", local_call, "hostile.local:Read"),
    ):
        hostile = _edited(onnx_exports["streaming"], tmp_path / name, edit)
        (hostile / "inside.bin").write_bytes(bytes(64))
        with pytest.raises(UntrustedModelError, match=expected):
            check_onnx_file(hostile / "model.onnx")
        video = next(Path(tiny_runs["raw"]).rglob("*.avi"))
        line = _one_line(cli_runner("predict", video, "--model", hostile, "--stream"))
        assert "runs the operators" in line and expected in line, line
        assert "--trust-model" in line
