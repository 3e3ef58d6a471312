"""The checks of a recipe whose model.architecture is a clip network's family (VideoMAE):
its size, the clip it takes and the starts it can have; and a segment model's refusal of a
clip network's settings. Every error is a ConfigError naming `section.key`.

The sizes and what clip each takes come from the registry (actrec.backbones.registry:
a family's clip_networks), so a new clip family needs nothing here.
"""

from __future__ import annotations

from actrec.backbones.registry import CLIP_NETWORKS, clip_network_names
from actrec.config.checks import invalid
from actrec.config.choices import CLIP_ARCHITECTURES, weights_source
from actrec.config.network_settings import network_with_settings
from actrec.config.recipe import DataConfig, ModelConfig, TrainConfig, resolved_input_size


def validate_clip_model(model: ModelConfig, data: DataConfig, train: TrainConfig) -> None:
    """ConfigError for the first setting a clip network of model.architecture cannot take."""
    sizes = clip_network_names(model.architecture)
    if model.backbone not in sizes:
        raise invalid(
            "model",
            "backbone",
            model.backbone,
            f"model.architecture={model.architecture} is built in one of its sizes: "
            f"{', '.join(sizes)}",
        )
    if data.modality != "rgb":
        raise invalid(
            "data",
            "modality",
            data.modality,
            f"a {model.architecture} network takes RGB clips: use data.modality=rgb",
        )
    side = resolved_input_size(model, data)
    network = network_with_settings(CLIP_NETWORKS[model.backbone], model.network)
    problem = network.input_problem(data.num_segments, side, side)
    if problem:
        raise invalid(
            "data",
            "num_segments" if "frames" in problem else "crop_size",
            data.num_segments if "frames" in problem else side,
            f"{problem} (data.num_segments frames of data.crop_size pixels)",
        )
    start = weights_source(model.weights)
    if start.kind not in ("none", "run"):
        raise invalid(
            "model",
            "weights",
            model.weights,
            f"a {model.architecture} network starts from none (random) or run:PATH (a "
            "finished run, e.g. one `actrec pretrained convert` made of a published file)",
        )
    if model.partial_bn:
        raise invalid(
            "model",
            "partial_bn",
            model.partial_bn,
            f"partial BN (TSN's frozen BatchNorm after the first) is for segment models; "
            f"a {model.architecture} network trains its normalisation whole: leave it null",
        )
    if train.distill_from is not None:
        raise invalid(
            "train",
            "distill_from",
            train.distill_from,
            "distillation matches a segment model's pooled features: use model.architecture "
            "tsn or tsm",
        )


def validate_segment_model(model: ModelConfig) -> None:
    """ConfigError when a tsn / tsm recipe names a clip network or its settings."""
    if model.backbone in CLIP_NETWORKS:
        family = next(a for a in CLIP_ARCHITECTURES if model.backbone in clip_network_names(a))
        raise invalid(
            "model",
            "backbone",
            model.backbone,
            f"it is a clip network, not a per-frame backbone: use model.architecture={family}",
        )
    for key, value, none in (
        ("drop_path_rate", model.drop_path_rate, "0"),
        ("network", model.network, "[]"),
    ):
        if value:
            raise invalid(
                "model",
                key,
                list(value) if isinstance(value, tuple) else value,
                f"it is a clip network's setting ({', '.join(CLIP_ARCHITECTURES)}): use "
                f"{none} with {model.architecture}",
            )
