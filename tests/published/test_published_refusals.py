"""`actrec pretrained convert` refuses a checkpoint whose tensors would poison a run, by the
tensor's name: NaN / inf values, a negative BatchNorm running variance, a tensor that
declares more data than the file stores or more values than its storage holds (zero strides;
refused before anything is allocated), a file cut short or garbled. Each: exit status 1,
one line naming the file and the tensor, no traceback, nothing written (an existing --out
untouched)."""

from __future__ import annotations

import time

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


def repeating_tensor(rows: int, columns: int):
    """A tensor of rows x columns over 4 stored values: strides (0, 0) repeat the first."""
    return torch.zeros(4).as_strided((rows, columns), (0, 0))


def timed_refusal(cli_runner, checkpoint, out, class_list) -> tuple[str, float]:
    """The refusal line of `refusal` and the seconds the command took (torch and
    TensorFlow imported before: what is timed is the reading, not the imports)."""
    import tensorflow  # noqa: F401

    start = time.monotonic()
    line = refusal(cli_runner, checkpoint, out, class_list)
    return line, time.monotonic() - start


@pytest.mark.parametrize("size", [10**6, 40000])
def test_a_tensor_whose_zero_strides_repeat_its_values_is_refused_by_its_element_count(
    cli_runner, tmp_path, class_list, size
):
    """size x size values over 4 stored ones: the extent check sees (size - 1) * 0 + 1
    values, every reader of the tensor would allocate size^2 (931 GiB / 6.4 GB)."""
    checkpoint = tmp_path / "zero-strides.pth"
    torch.save({"state_dict": {CLASSIFIER: repeating_tensor(size, size)}}, checkpoint)
    line, seconds = timed_refusal(cli_runner, checkpoint, tmp_path / "run", class_list)
    assert f"tensor '{CLASSIFIER}' of shape ({size}, {size}) declares {size * size} values" in line
    assert "its storage holds 4 (its strides repeat values)" in line
    assert seconds < 5, seconds


def test_nested_shared_lists_are_walked_once_and_the_tensor_at_their_bottom_refused(
    cli_runner, tmp_path, class_list
):
    """40 levels of a list holding the one below twice: 2^40 paths in a 2 KB file, each
    list walked once; the zero-strides tensor at the bottom is named by its first path."""
    nested = [repeating_tensor(40000, 40000)]
    for _ in range(40):
        nested = [nested, nested]
    checkpoint = tmp_path / "nested.pth"
    torch.save({"state_dict": {"meta": nested}}, checkpoint)
    assert checkpoint.stat().st_size < 4000
    line, seconds = timed_refusal(cli_runner, checkpoint, tmp_path / "run", class_list)
    assert f"tensor 'state_dict/meta{'/0' * 41}' of shape (40000, 40000)" in line
    assert seconds < 5, seconds


def test_two_names_sharing_one_storage_are_read(tmp_path):
    """Tied weights (two views of one storage) declare its values twice: allowed."""
    from actrec.published.torch_files import read_torch_checkpoint

    weight = torch.arange(6.0)
    checkpoint = tmp_path / "tied.pth"
    torch.save({"embedding": weight.view(2, 3), "classifier": weight.view(3, 2)}, checkpoint)
    state = read_torch_checkpoint(checkpoint).state_dict
    assert state["embedding"].shape == (2, 3) and state["classifier"].shape == (3, 2)


def test_metadata_of_nested_shared_lists_is_skipped_at_once(tmp_path):
    """The file's other entries are metadata only when small: 2^40 shared values are
    skipped in milliseconds, the state dict read."""
    from actrec.published.torch_files import read_torch_checkpoint

    nested = [1.0]
    for _ in range(40):
        nested = [nested, nested]
    checkpoint = tmp_path / "nested-metadata.pth"
    state_dict = {CLASSIFIER: torch.ones(2, 2)}
    torch.save({"state_dict": state_dict, "meta": nested, "epoch": 3}, checkpoint)
    read_torch_checkpoint(checkpoint)  # torch imported: what is timed next is the reading
    start = time.monotonic()
    read = read_torch_checkpoint(checkpoint)
    assert time.monotonic() - start < 1
    assert read.metadata == {"epoch": 3} and list(read.state_dict) == [CLASSIFIER]
