"""Where a published video checkpoint comes from, told by its file name, and the checks of
`actrec pretrained convert` / `import` that need only that name (no file is read, no
TensorFlow imported: an argument mistake is answered at once).

The base URLs are docs/model-zoo.md's: TSM's files are named there in full, so a missing one
is named with its URL; mmaction2's live in per-config folders the name does not say.
"""

from __future__ import annotations

from pathlib import Path

from actrec.errors import ConfigError, WeightsError
from actrec.published.file_names import settings_from_file_name

TSM_MODELS_URL = "https://hanlab18.mit.edu/projects/tsm/models/"
MMACTION2_MODELS_URL = "https://download.openmmlab.com/mmaction/v1.0/recognition/"
ONLINE_DEMO_FILE = "mobilenetv2_jester_online.pth.tar"
"""TSM's online demo model (online_demo/ of mit-han-lab/temporal-shift-module)."""
MODEL_ZOO_PAGE = "docs/model-zoo.md"


def video_checkpoint_source(name: str) -> str | None:
    """ "tsm" or "mmaction2" when the file name `name` is one of theirs (a published video
    model), else None."""
    if name == ONLINE_DEMO_FILE:
        return "tsm"
    return settings_from_file_name(name).source


def download_hint(name: str) -> str | None:
    """Where to download the published file `name`, None when its name is not a published
    one."""
    source = video_checkpoint_source(name)
    if name == ONLINE_DEMO_FILE:
        return "TSM's online demo (mit-han-lab/temporal-shift-module, online_demo/) downloads it"
    if source == "tsm":
        return f"download it from {TSM_MODELS_URL}{name}"
    if source == "mmaction2":
        return f"download it from mmaction2's model zoo under {MMACTION2_MODELS_URL}"
    return None


def check_checkpoint_file(path: Path | str) -> None:
    """WeightsError when the checkpoint to convert is not a file: a published name is named
    with where to download it."""
    path = Path(path)
    if path.is_file():
        return
    if path.is_dir():
        raise WeightsError(f"{path} is a folder; give the path of a PyTorch .pth file")
    hint = download_hint(path.name)
    where = f"{hint} ({MODEL_ZOO_PAGE} lists the published files)" if hint else None
    raise WeightsError(f"{path}: no such file; {where or 'give the path of a PyTorch .pth file'}")


def refuse_video_checkpoint_import(path: Path | str) -> None:
    """ConfigError when the file given to `actrec pretrained import` (ImageNet weights of a
    backbone) is by its name a published video model, which `convert` takes."""
    path = Path(path)
    source = video_checkpoint_source(path.name)
    if source is None:
        return
    who = "TSM's" if source == "tsm" else "mmaction2's"
    raise ConfigError(
        f"{path.name} is {who} published video model, not a backbone's ImageNet weights; "
        f"convert it into a run folder: actrec pretrained convert {path} --out runs/NAME"
    )
