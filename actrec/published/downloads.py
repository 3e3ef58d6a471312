"""Where a published video checkpoint comes from, told by its file name, and the checks of
`actrec pretrained convert` / `import` that need only that name (no file is read, no
TensorFlow imported: an argument mistake is answered at once).

The base URLs are docs/model-zoo.md's: TSM's files are named there in full, so a missing one
is named with its URL; mmaction2's live in per-config folders the name does not say.
"""

from __future__ import annotations

from pathlib import Path

from actrec.errors import ConfigError, WeightsError
from actrec.published.sources.registry import PublishedSource, published_sources

MODEL_ZOO_PAGE = "docs/model-zoo.md"


def video_checkpoint_source(name: str) -> PublishedSource | None:
    """The source whose published video model the file name `name` is, else None."""
    for source in published_sources():
        if source.download_hint(name) is not None:
            return source
    return None


def download_hint(name: str) -> str | None:
    """Where to download the published file `name`, None when its name is not a published
    one."""
    source = video_checkpoint_source(name)
    return None if source is None else source.download_hint(name)


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
    raise ConfigError(
        f"{path.name} is {source.title} published video model, not a backbone's ImageNet weights; "
        f"convert it into a run folder: actrec pretrained convert {path} --out runs/NAME"
    )
