"""actrec.published.torch_files: PyTorch checkpoints read as numpy arrays, no code run.

Every file here is written by the real torch.save (zip format, and the legacy format of
torch < 1.6 with `_use_new_zipfile_serialization=False`).
"""

from __future__ import annotations

import hashlib
import os
import sys
import types
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

from actrec.errors import WeightsError
from actrec.published.torch_files import read_torch_checkpoint

torch = pytest.importorskip("torch")

HISTORY_BUFFER_MODULE = "mmengine.logging.history_buffer"
MESSAGE_HUB_MODULE = "mmengine.logging.message_hub"


def _state_dict(prefix: str = "") -> OrderedDict:
    generator = torch.Generator().manual_seed(0)
    return OrderedDict(
        [
            (f"{prefix}conv1.weight", torch.randn(4, 3, 3, 3, generator=generator)),
            (f"{prefix}bn1.weight", torch.rand(4, generator=generator)),
            (f"{prefix}bn1.running_var", torch.rand(4, generator=generator, dtype=torch.float64)),
            (f"{prefix}bn1.num_batches_tracked", torch.tensor(120, dtype=torch.int64)),
            (f"{prefix}fc.weight", torch.randn(5, 4, generator=generator)),
        ]
    )


def _assert_equal_tensors(read: dict, written: dict) -> None:
    assert list(read) == list(written)
    for key, tensor in written.items():
        assert isinstance(read[key], np.ndarray)
        assert read[key].dtype == tensor.numpy().dtype, key
        np.testing.assert_array_equal(read[key], tensor.numpy(), err_msg=key)


def _save(obj, path, file_format: str):
    torch.save(obj, path, _use_new_zipfile_serialization=file_format == "zip")
    return path


def test_tsm_checkpoint_in_the_legacy_format(tmp_path):
    written = _state_dict("module.")
    optimizer = {"state": {0: {"momentum_buffer": torch.ones(2)}}, "param_groups": [{"lr": 0.01}]}
    checkpoint = {
        "epoch": 50,
        "arch": "resnet50",
        "state_dict": written,
        "optimizer": optimizer,
        "best_prec1": 74.1,
    }
    path = _save(checkpoint, tmp_path / "TSM_kinetics_RGB_resnet50.pth.tar", "legacy")

    read = read_torch_checkpoint(str(path))

    assert read.file_format == "legacy"
    assert read.path == path
    _assert_equal_tensors(read.state_dict, written)
    assert read.state_dict["module.bn1.num_batches_tracked"].dtype == np.int64
    assert read.metadata == {"epoch": 50, "arch": "resnet50", "best_prec1": 74.1}
    assert read.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_bare_state_dict_in_the_zip_format(tmp_path):
    written = _state_dict()
    path = _save(written, tmp_path / "resnet50-0676ba61.pth", "zip")

    read = read_torch_checkpoint(path)

    assert read.file_format == "zip"
    _assert_equal_tensors(read.state_dict, written)
    assert read.metadata == {}


@pytest.mark.parametrize("key", ["model", "model_state"])
def test_state_dict_under_other_common_keys(tmp_path, key):
    written = _state_dict()
    path = _save(
        {key: written, "epoch": np.int64(7), "acc": torch.tensor(0.5)}, tmp_path / "m.pth", "zip"
    )

    read = read_torch_checkpoint(path)

    _assert_equal_tensors(read.state_dict, written)
    assert read.metadata == {"epoch": 7, "acc": 0.5}
    assert type(read.metadata["epoch"]) is int


# mmengine's classes, pickled under their real module paths (modules made for the writing only).
class HistoryBuffer:
    __module__ = HISTORY_BUFFER_MODULE

    def __init__(self, values):
        self._log_history = np.array(values, dtype=np.float64)
        self._count_history = np.ones(len(values), dtype=np.int64)
        self.max_length = 1000000

    def mean(self):
        return self._log_history.mean()

    def __getstate__(self):
        # as mmengine >= 0.7.3: protocol 2 pickles HistoryBuffer.mean as getattr(class, "mean")
        return {**self.__dict__, "statistics_methods": {"mean": HistoryBuffer.mean}}


class MessageHub:
    __module__ = MESSAGE_HUB_MODULE

    def __init__(self):
        self._log_scalars = OrderedDict([("train/loss", HistoryBuffer([2.0, 1.5]))])
        self._runtime_info = OrderedDict([("epoch", 3), ("val/top1", np.float64(0.71))])


def _fake_mmengine_modules() -> dict[str, types.ModuleType]:
    history_buffer = types.ModuleType(HISTORY_BUFFER_MODULE)
    history_buffer.HistoryBuffer = HistoryBuffer
    message_hub = types.ModuleType(MESSAGE_HUB_MODULE)
    message_hub.MessageHub = MessageHub
    logging = types.ModuleType("mmengine.logging")
    return {
        "mmengine": types.ModuleType("mmengine"),
        "mmengine.logging": logging,
        HISTORY_BUFFER_MODULE: history_buffer,
        MESSAGE_HUB_MODULE: message_hub,
    }


def _write_mmengine_checkpoint(path, file_format: str, written: dict) -> None:
    """An mmaction2 1.x checkpoint as mmengine's Runner.save_checkpoint writes it."""
    checkpoint = {
        "meta": {
            "epoch": 3,
            "iter": 900,
            "cfg": "model = dict(type='Recognizer2D')",
            "seed": np.int64(42),
            "dtype": np.dtype("float32"),
            "dataset_meta": {},
        },
        "state_dict": written,
        "message_hub": {
            "log_scalars": OrderedDict([("train/loss", HistoryBuffer([2.0, 1.5]))]),
            "runtime_info": OrderedDict([("epoch", 3), ("best_score", np.float64(0.71))]),
            "resumed_keys": OrderedDict([("train/loss", True)]),
        },
        "hub_object": MessageHub(),
        "optimizer": {"state": {}, "param_groups": [{"lr": 0.01, "momentum": 0.9}]},
        "param_schedulers": [{"milestones": {5: 1}, "last_step": 3}],
        "best_top1": np.float64(0.71),
    }
    modules = _fake_mmengine_modules()
    sys.modules.update(modules)
    try:
        _save(checkpoint, path, file_format)
    finally:
        for name in modules:
            del sys.modules[name]


@pytest.mark.parametrize("file_format", ["zip", "legacy"])
def test_mmengine_checkpoint_read_and_its_bookkeeping_skipped(tmp_path, file_format):
    written = _state_dict()
    path = tmp_path / "tsm_imagenet-pretrained-r50_8xb16-1x1x8-50e_kinetics400-rgb.pth"
    _write_mmengine_checkpoint(path, file_format, written)
    assert "mmengine" not in sys.modules  # reading cannot import mmengine's classes
    if file_format == "zip":  # the file names what a real one does
        named = set(torch.serialization.get_unsafe_globals_in_checkpoint(str(path)))
        assert {
            f"{HISTORY_BUFFER_MODULE}.HistoryBuffer",
            f"{MESSAGE_HUB_MODULE}.MessageHub",
            "builtins.getattr",
            "numpy.dtype",
            "numpy.ndarray",
        } <= named
        assert any(name.endswith("multiarray.scalar") for name in named)
    allowed_before = torch.serialization.get_safe_globals()

    read = read_torch_checkpoint(path)

    _assert_equal_tensors(read.state_dict, written)
    assert read.metadata == {"best_top1": 0.71}
    assert read.file_format == file_format
    # as sets: restoring them rebuilds the set, whose order can change (what else the process
    # imported registered more); nothing read may stay allowed
    assert set(torch.serialization.get_safe_globals()) == set(allowed_before)
    assert "mmengine" not in sys.modules


class _Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("file_format", ["zip", "legacy"])
def test_file_that_would_run_code_is_refused_and_nothing_runs(tmp_path, file_format):
    marker = tmp_path / "MARKER"
    path = _save(
        {"state_dict": _state_dict(), "x": _Payload(marker)}, tmp_path / "m.pth", file_format
    )

    with pytest.raises(WeightsError) as caught:
        read_torch_checkpoint(path)

    message = str(caught.value)
    assert str(path) in message
    assert f"{os.system.__module__}.system" in message
    assert "running code" in message and "never runs code" in message
    assert not marker.exists()
    # the payload is live: an unsafe load would have run it
    torch.load(path, weights_only=False)
    assert marker.exists()


def test_eval_in_a_legacy_file_is_refused_by_name(tmp_path):
    class Evaluated:
        def __reduce__(self):
            return (eval, ("1 + 1",))

    path = _save({"state_dict": _state_dict(), "x": Evaluated()}, tmp_path / "m.pth", "legacy")

    with pytest.raises(
        WeightsError, match=r"m\.pth cannot be read without running code.*builtins\.eval"
    ):
        read_torch_checkpoint(path)


def test_unknown_class_is_refused_and_every_unsafe_global_named(tmp_path, monkeypatch):
    module = types.ModuleType("somepackage.models")
    module.Net = type("Net", (), {"__module__": "somepackage.models"})
    checkpoint = {"state_dict": _state_dict(), "net": module.Net(), "x": _Payload(tmp_path / "M")}
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "somepackage", types.ModuleType("somepackage"))
        patch.setitem(sys.modules, "somepackage.models", module)
        path = _save(checkpoint, tmp_path / "m.pth", "zip")

    with pytest.raises(WeightsError) as caught:
        read_torch_checkpoint(path)

    # the zip format's pickle is scanned before loading: all its unsafe globals, not the first
    assert f"needs {os.system.__module__}.system, somepackage.models.Net," in str(caught.value)


class _AttributeLookup:
    def __reduce__(self):
        return (getattr, (np.ndarray, "tofile"))


@pytest.mark.parametrize("file_format", ["zip", "legacy"])
def test_getattr_on_anything_but_a_skipped_class_is_refused(tmp_path, file_format):
    path = _save(
        {"state_dict": _state_dict(), "x": _AttributeLookup()}, tmp_path / "m.pth", file_format
    )

    with pytest.raises(WeightsError, match=r"without running code.*'tofile'"):
        read_torch_checkpoint(path)


@pytest.mark.parametrize("file_format", ["zip", "legacy"])
def test_truncated_file(tmp_path, file_format):
    whole = _save({"state_dict": _state_dict(), "epoch": 1}, tmp_path / "whole.pth", file_format)
    data = whole.read_bytes()
    cut = tmp_path / "cut.pth"
    cut.write_bytes(data[: len(data) // 2])

    with pytest.raises(WeightsError, match=r"cut\.pth.*truncated or damaged"):
        read_torch_checkpoint(cut)
    assert read_torch_checkpoint(whole).state_dict  # the whole file is readable


@pytest.mark.parametrize("file_format", ["zip", "legacy"])
def test_file_cut_anywhere_is_damaged_not_refused(tmp_path, file_format):
    # a legacy file cut inside a global's name ("torch.FloatSto") must not read as a refusal
    whole = _save({"state_dict": _state_dict(), "epoch": 1}, tmp_path / "whole.pth", file_format)
    data = whole.read_bytes()
    cut = tmp_path / "cut.pth"
    for length in range(16, len(data), 7):
        cut.write_bytes(data[:length])
        with pytest.raises(WeightsError, match="truncated or damaged"):
            read_torch_checkpoint(cut)


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")  # torch's, when it reads one
@pytest.mark.parametrize("file_format", ["zip", "legacy"])
def test_pickle_protocol_the_safe_reader_cannot_read(tmp_path, file_format):
    path = tmp_path / "m.pth"
    torch.save(
        {"state_dict": _state_dict()},
        path,
        pickle_protocol=4,
        _use_new_zipfile_serialization=file_format == "zip",
    )

    with pytest.raises(WeightsError, match=r"m\.pth: .*protocol 4 or later"):
        read_torch_checkpoint(path)


def test_files_that_are_not_checkpoints(tmp_path):
    text = tmp_path / "labels.txt"
    text.write_text("abseiling\nair drumming\n")
    hdf5 = tmp_path / "resnet50.weights.h5"
    h5py = pytest.importorskip("h5py")
    with h5py.File(hdf5, "w") as file:
        file["kernel"] = np.zeros(3)
    archive = tmp_path / "frames.zip"
    with zipfile.ZipFile(archive, "w") as file:
        file.writestr("frame.jpg", b"not a tensor")

    with pytest.raises(WeightsError, match=r"labels\.txt is not a PyTorch checkpoint"):
        read_torch_checkpoint(text)
    with pytest.raises(WeightsError, match=r"weights\.h5 is an HDF5 file.*not a PyTorch"):
        read_torch_checkpoint(hdf5)
    with pytest.raises(WeightsError, match=r"frames\.zip is a zip archive but not a torch\.save"):
        read_torch_checkpoint(archive)


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(WeightsError, match=r"absent\.pth: no such file"):
        read_torch_checkpoint(tmp_path / "absent.pth")
    with pytest.raises(WeightsError, match="no such file"):
        read_torch_checkpoint(tmp_path)


def test_checkpoint_without_a_state_dict(tmp_path):
    no_tensors = _save({"epoch": 3, "state_dict": {}}, tmp_path / "empty.pth", "zip")
    bare_tensor = _save(torch.zeros(3), tmp_path / "tensor.pth", "zip")

    with pytest.raises(WeightsError, match=r"empty\.pth holds no state dict.*epoch, state_dict"):
        read_torch_checkpoint(no_tensors)
    with pytest.raises(WeightsError, match=r"tensor\.pth holds a Tensor, not a state dict"):
        read_torch_checkpoint(bare_tensor)


def test_without_torch_says_what_to_install(tmp_path, monkeypatch):
    path = _save(_state_dict(), tmp_path / "m.pth", "zip")
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError

    with pytest.raises(WeightsError) as caught:
        read_torch_checkpoint(path)

    assert str(path) in str(caught.value)
    assert 'pip install "actrec[torch]"' in str(caught.value)
