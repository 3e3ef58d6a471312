"""What a clip is (ClipSpec) and what a prepared folder can give (DatasetInfo)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from actrec.config.recipe import DataConfig, Recipe
from actrec.config.validate import validate_data
from actrec.data.format.manifest import read_manifest
from actrec.data.input import augment
from actrec.errors import ConfigError, DatasetError


@dataclass(frozen=True)
class ClipSpec(DataConfig):
    """What one training / evaluation example is: the recipe's data section
    (actrec.config.DataConfig, whose fields and checks it has) and how the pipeline finishes
    its clips.

    normalization: "none" keeps the stored scale and lets the model apply its backbone's
        preprocessing (actrec.models.preprocessing): RGB in [0, 255], flow in [0, 255] with
        127.5 = no motion (the quantised scale of docs/architecture.md §2).
        "minus_one_one": RGB / 127.5 - 1, flow pixels / 20, both in [-1, 1]. "imagenet"
        (RGB only): ImageNet mean / std.
    max_distort, fixed_crop: TSN multi-scale crop (see augment.multi_scale_crop_box), with
        the data section's scales and more_fix_crop (13 fixed positions, else 5).
    """

    normalization: str = "none"
    max_distort: int = 1
    fixed_crop: bool = True

    def __post_init__(self) -> None:
        validate_data(self)
        if self.normalization not in augment.NORMALIZATIONS:
            raise ConfigError(
                f"normalization={self.normalization!r} is not valid; choose one of: "
                f"{', '.join(augment.NORMALIZATIONS)}"
            )
        if self.modality == "flow" and self.normalization == "imagenet":
            raise ConfigError(
                "normalization='imagenet' does not apply to flow; use 'none' (stored 0-255 "
                "scale) or 'minus_one_one' for the flow stream"
            )

    @property
    def channels(self) -> int:
        """C of the clips: 3 for RGB, 2 * new_length for flow."""
        return 3 if self.modality == "rgb" else 2 * self.new_length

    @property
    def eval_scale_size(self) -> int:
        """The short side evaluation resizes to before its centre crop."""
        if self.scale_size is not None:
            return self.scale_size
        return augment.default_scale_size(self.crop_size)


def clip_spec(recipe: Recipe, training: bool) -> ClipSpec:
    """The input pipeline's ClipSpec of a recipe: its data section whole, normalisation
    "none" (the models normalise inside the graph), flip only in training."""
    data = recipe.data
    values = {item.name: getattr(data, item.name) for item in fields(data)}
    return ClipSpec(**{**values, "flip": data.flip and training})


@dataclass(frozen=True)
class DatasetInfo:
    """What a prepared folder holds (from its manifest).

    frame_short_side: the smallest short side of the stored frames (every video's, from
        the manifest); None when no video was prepared.
    largest_short_side: the largest one (what padded training crops are sized to).
    """

    prepared_dir: Path
    classes: tuple[str, ...]
    num_videos: dict[str, int]
    has_flow: bool
    flow_method: str
    frame_short_side: int | None
    largest_short_side: int | None = None

    @property
    def num_classes(self) -> int:
        return len(self.classes)


def _short_sides(manifest: dict) -> list[int]:
    """min(height, width) of every prepared video the manifest lists."""
    return [
        min(int(video["height"]), int(video["width"]))
        for video in manifest.get("videos", ())
        if video.get("status") == "ok" and video.get("height")
    ]


def dataset_info(prepared_dir: Path | str) -> DatasetInfo:
    """Classes, videos per split, flow presence and frame size of a prepared folder."""
    prepared_dir = Path(prepared_dir)
    manifest = read_manifest(prepared_dir)
    flow_method = str(manifest.get("settings", {}).get("flow", "none"))
    short_sides = _short_sides(manifest)
    return DatasetInfo(
        prepared_dir=prepared_dir,
        classes=tuple(manifest.get("classes", ())),
        num_videos={
            split: int(info.get("videos", 0)) for split, info in manifest["splits"].items()
        },
        has_flow=flow_method != "none",
        flow_method=flow_method,
        frame_short_side=min(short_sides) if short_sides else None,
        largest_short_side=max(short_sides) if short_sides else None,
    )


def check_clip_spec(info: DatasetInfo, spec: ClipSpec) -> None:
    """DatasetError when the prepared data cannot give `spec`'s clips."""
    if spec.modality == "flow" and not info.has_flow:
        raise DatasetError(
            f"{info.prepared_dir} was prepared without optical flow (--flow none), so it has no "
            "flow for modality 'flow'; prepare it again with flow, e.g. "
            f"`actrec prepare DATASET --flow dis --out {info.prepared_dir}` (into a new folder)"
        )
    if info.frame_short_side is not None and spec.crop_size > info.frame_short_side:
        raise DatasetError(
            f"crop_size={spec.crop_size} exceeds the short side of the frames stored in "
            f"{info.prepared_dir} ({info.frame_short_side} px); use a crop_size <= "
            f"{info.frame_short_side}, or prepare with a larger --size"
        )
