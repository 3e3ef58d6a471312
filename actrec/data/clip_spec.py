"""What a clip is (ClipSpec) and what a prepared folder can give (DatasetInfo)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from actrec.config.choices import MODALITIES
from actrec.config.recipe import Recipe
from actrec.data import augment, sampling
from actrec.data.manifest import read_manifest
from actrec.errors import ConfigError, DatasetError


@dataclass(frozen=True)
class ClipSpec:
    """What one training / evaluation example is.

    modality: "rgb" or "flow".
    num_segments: T, frames (or flow stacks) per clip.
    new_length: L, consecutive frames per segment: 1 for RGB; flow stacks L flow frames
        into 2 L channels (recipes use 5).
    crop_size: output side in pixels.
    sampling: "tsn" (one frame per segment) or "dense" (TSM: T frames every
        frame_interval frames).
    scale_size: evaluation resizes the short side to this before the centre crop
        (default crop_size * 256 / 224).
    normalization: "none" keeps the stored scale and lets the model apply its backbone's
        preprocessing (actrec.models.preprocessing): RGB in [0, 255], flow in [0, 255] with
        127.5 = no motion (the quantised scale of docs/architecture.md §2).
        "minus_one_one": RGB / 127.5 - 1, flow pixels / 20, both in [-1, 1]. "imagenet"
        (RGB only): ImageNet mean / std.
    flip: random horizontal flip in training.
    scales, max_distort, fixed_crop, more_fixed_crops: TSN multi-scale crop (see
        augment.multi_scale_crop_box): 13 fixed positions with more_fixed_crops, else 5.
    """

    modality: str = "rgb"
    num_segments: int = 8
    new_length: int = 1
    crop_size: int = 224
    sampling: str = "tsn"
    frame_interval: int = 2
    scale_size: int | None = None
    normalization: str = "none"
    flip: bool = True
    scales: tuple[float, ...] = field(default=augment.MULTI_SCALES)
    max_distort: int = 1
    fixed_crop: bool = True
    more_fixed_crops: bool = False

    def __post_init__(self) -> None:
        if self.modality not in MODALITIES:
            raise ConfigError(
                f"modality={self.modality!r} is not valid; choose one of: {', '.join(MODALITIES)}"
            )
        if self.sampling not in sampling.SAMPLINGS:
            raise ConfigError(
                f"sampling={self.sampling!r} is not valid; choose one of: "
                f"{', '.join(sampling.SAMPLINGS)}"
            )
        for name in ("num_segments", "new_length", "crop_size", "frame_interval"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name}={value!r} is not valid; use a whole number >= 1")
        if self.modality == "rgb" and self.new_length != 1:
            raise ConfigError(
                f"new_length={self.new_length} with modality 'rgb': RGB clips take one frame "
                "per segment; use new_length=1 (stacking applies to flow)"
            )
        if self.scale_size is not None and (
            not isinstance(self.scale_size, int) or self.scale_size < self.crop_size
        ):
            raise ConfigError(
                f"scale_size={self.scale_size!r} is not valid; use a whole number >= "
                f"crop_size={self.crop_size}, or None for crop_size * 256 / 224"
            )
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
    """The input pipeline's ClipSpec of a recipe: normalisation "none" (the models normalise
    inside the graph); flip only in training."""
    data = recipe.data
    return ClipSpec(
        modality=data.modality,
        num_segments=data.num_segments,
        new_length=data.new_length,
        crop_size=data.crop_size,
        sampling=data.sampling,
        frame_interval=data.frame_interval,
        scale_size=data.scale_size,
        normalization="none",
        flip=data.flip and training,
        scales=tuple(data.scales),
        more_fixed_crops=data.more_fix_crop,
    )


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
