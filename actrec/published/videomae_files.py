"""A published VideoMAE file read as data: nothing in it is run.

    a Hugging Face folder    config.json + model.safetensors (read by safetensors, which
                             parses a JSON header and copies bytes) or pytorch_model.bin
    a .pth / .bin file       the authors' or V2's checkpoint, by actrec's checked pickle
                             reader (actrec.published.torch_files)

Every tensor's values are checked as the other published files' are (no NaN / inf).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from actrec.errors import WeightsError
from actrec.published.tensor_checks import check_tensor_values
from actrec.published.torch_files import read_torch_checkpoint

SAFETENSORS_FILE, TORCH_FILE, CONFIG_FILE = "model.safetensors", "pytorch_model.bin", "config.json"
INSTALL_SAFETENSORS = 'pip install "actrec[videomae]"'


@dataclass(frozen=True)
class VideoMAEFile:
    """state_dict: tensor name -> array in PyTorch's layout; config: Hugging Face's
    config.json (None for the authors' files); weights_file: the file the tensors came from."""

    state_dict: dict[str, np.ndarray]
    config: dict | None
    weights_file: Path


def read_videomae_file(path: Path | str) -> VideoMAEFile:
    """The tensors (and config) of a Hugging Face folder or an authors' checkpoint;
    WeightsError naming the file and the fix when it is neither or cannot be read."""
    path = Path(path)
    if path.is_dir():
        return _huggingface_folder(path)
    if not path.is_file():
        raise WeightsError(
            f"{path}: no such file or folder; give a VideoMAE .pth / .bin file or a "
            "Hugging Face folder"
        )
    if path.suffix == ".safetensors":
        return VideoMAEFile(_safetensors_arrays(path), _config_beside(path), path)
    return VideoMAEFile(read_torch_checkpoint(path).state_dict, _config_beside(path), path)


def _huggingface_folder(folder: Path) -> VideoMAEFile:
    config = _config_beside(folder / CONFIG_FILE)
    if config is None:
        raise WeightsError(
            f"{folder}: no {CONFIG_FILE}; give a Hugging Face model folder (save_pretrained's)"
        )
    for name, read in ((SAFETENSORS_FILE, _safetensors_arrays), (TORCH_FILE, _torch_arrays)):
        if (folder / name).is_file():
            return VideoMAEFile(read(folder / name), config, folder / name)
    raise WeightsError(
        f"{folder}: neither {SAFETENSORS_FILE} nor {TORCH_FILE}; download the model's "
        "weights file into it"
    )


def _config_beside(path: Path) -> dict | None:
    config_file = path if path.name == CONFIG_FILE else path.parent / CONFIG_FILE
    if not config_file.is_file() or config_file.is_symlink():
        return None
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise WeightsError(f"{config_file}: not JSON ({error}); download it again") from None
    if not isinstance(config, dict) or config.get("model_type") != "videomae":
        return None
    return config


def _safetensors_arrays(path: Path) -> dict[str, np.ndarray]:
    try:
        from safetensors import SafetensorError
        from safetensors.numpy import load_file
    except ImportError:  # an optional dependency: the [videomae] extra
        raise WeightsError(
            f"{path}: reading .safetensors needs safetensors: {INSTALL_SAFETENSORS}"
        ) from None
    try:
        arrays = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as error:
        raise WeightsError(
            f"{path}: not a readable safetensors file ({error}); download it again"
        ) from None
    check_tensor_values(path, arrays)
    return arrays


def _torch_arrays(path: Path) -> dict[str, np.ndarray]:
    return read_torch_checkpoint(path).state_dict
