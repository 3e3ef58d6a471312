"""`actrec pretrained convert` refuses a checkpoint whose tensors would poison a run, by the
tensor's name: NaN / inf values, a negative BatchNorm running variance, a tensor that
declares more data than the file stores (refused before anything is allocated), a file cut
short or garbled. Each: exit status 1, one line naming the file and the tensor, no
traceback, nothing written (an existing --out untouched)."""

from __future__ import annotations

import pytest
import torch
import torch_reference as reference
from crafted_checkpoints import with_first_tensor_integer

CLASSIFIER = "module.new_fc.weight"
VARIANCE = "module.base_model.features.1.conv.1.running_var"


@pytest.fixture(scope="module")
def official_checkpoint(tmp_path_factory):
    """A TSM MobileNetV2 (8 classes, 2 segments) in TSM's file format and name, and its
    state dict."""
    folder = tmp_path_factory.mktemp("tsm-mobilenet")
    model = reference.randomise_(reference.tsm_mobilenet_v2(8, 2), seed=11)
    path = reference.save_tsm(model, folder)
    return path, torch.load(path, weights_only=True)


@pytest.fixture
def class_list(tmp_path):
    path = tmp_path / "classes.txt"
    path.write_text("".join(f"class {index}\n" for index in range(8)))
    return path


def altered(official_checkpoint, folder, change) -> object:
    """The official checkpoint re-saved (same name and format) after `change(state_dict)`."""
    path, checkpoint = official_checkpoint
    state = {key: value.clone() for key, value in checkpoint["state_dict"].items()}
    change(state)
    copy = folder / path.name
    torch.save({**checkpoint, "state_dict": state}, copy, _use_new_zipfile_serialization=False)
    return copy


def refusal(cli_runner, checkpoint, out, class_list) -> str:
    """The one error line of a refused conversion into `out`, which must not appear."""
    result = cli_runner("pretrained", "convert", checkpoint, "--out", out, "--classes", class_list)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    (line,) = [line for line in result.output.splitlines() if line.strip()]
    assert line.startswith("error: ") and checkpoint.name in line
    assert not out.exists()
    assert [path.name for path in out.parent.iterdir() if path.name.startswith(".")] == []
    return line


def test_nan_and_inf_in_the_classifier_are_refused_by_tensor_name(
    cli_runner, tmp_path, official_checkpoint, class_list
):
    def poison(state):
        state[CLASSIFIER][0, :2] = float("nan")
        state[CLASSIFIER][3, 5] = float("-inf")

    checkpoint = altered(official_checkpoint, tmp_path, poison)
    line = refusal(cli_runner, checkpoint, tmp_path / "run", class_list)
    assert f"tensor '{CLASSIFIER}' holds 3 NaN / inf values" in line
    assert "would poison training" in line and "download it again" in line


def test_a_negative_batch_norm_variance_is_refused_by_tensor_name(
    cli_runner, tmp_path, official_checkpoint, class_list
):
    def poison(state):
        state[VARIANCE][2] = -0.5

    checkpoint = altered(official_checkpoint, tmp_path, poison)
    line = refusal(cli_runner, checkpoint, tmp_path / "run", class_list)
    assert f"tensor '{VARIANCE}' holds 1 negative BatchNorm running variances" in line


def test_a_poisoned_file_leaves_an_existing_out_folder_untouched(
    cli_runner, tmp_path, official_checkpoint, class_list
):
    def poison(state):
        state[CLASSIFIER][0, 0] = float("inf")

    checkpoint = altered(official_checkpoint, tmp_path, poison)
    out = tmp_path / "run"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    result = cli_runner("pretrained", "convert", checkpoint, "--out", out, "--classes", class_list)
    assert result.exit_code == 1
    assert [path.name for path in out.iterdir()] == ["mine.txt"]
    assert (out / "mine.txt").read_text() == "keep me"


@pytest.mark.parametrize("file_format", ["legacy", "zip"])
def test_a_tensor_declaring_more_data_than_the_file_stores_is_refused_before_allocation(
    cli_runner, tmp_path, official_checkpoint, class_list, file_format
):
    """10^12 float32 values declared over the first tensor's few stored ones: torch.load
    would ask for 4 TB (the legacy format allocates before it reads the data)."""
    path, checkpoint = official_checkpoint
    source = path
    if file_format == "zip":
        source = tmp_path / "zip" / path.name
        source.parent.mkdir()
        torch.save(checkpoint, source)
    first = next(iter(checkpoint["state_dict"]))
    crafted = with_first_tensor_integer(source, tmp_path / path.name, "values", 10**12)
    line = refusal(cli_runner, crafted, tmp_path / "run", class_list)
    stored = checkpoint["state_dict"][first].numel() * 4
    assert f"tensor '{first}' declares 1000000000000 values (4000000000000 bytes)" in line
    assert f"the file stores {stored} bytes for it" in line


def test_a_tensor_reaching_past_its_storage_is_refused(
    cli_runner, tmp_path, official_checkpoint, class_list
):
    path, checkpoint = official_checkpoint
    first, tensor = next(iter(checkpoint["state_dict"].items()))
    crafted = with_first_tensor_integer(path, tmp_path / path.name, "offset", 5)
    line = refusal(cli_runner, crafted, tmp_path / "run", class_list)
    assert f"tensor '{first}' of shape {tuple(tensor.shape)} needs {tensor.numel() + 5}" in line


@pytest.mark.parametrize("damage", ["cut in its data", "garbled pickle"])
def test_a_truncated_or_corrupt_file_is_refused_in_one_line(
    cli_runner, tmp_path, official_checkpoint, class_list, damage
):
    path, _ = official_checkpoint
    data = path.read_bytes()
    damaged = tmp_path / path.name
    if damage == "cut in its data":
        damaged.write_bytes(data[: len(data) - 1000])
    else:  # bytes within the state dict's pickle (after the legacy format's first pickles)
        damaged.write_bytes(data[:400] + b"\xff" * 64 + data[464:])
    line = refusal(cli_runner, damaged, tmp_path / "run", class_list)
    assert "truncated or damaged" in line and "download it again" in line
