"""The backbone registry: the only list of backbones, gathered from the family folders.

Every sub-package of actrec.backbones is one family (resnet, mobilenet_v2, ...) whose
`spec.py` defines `FAMILY` (actrec.backbones.spec.BackboneFamily); the registry imports
them all, so adding a family is one folder, its test and its docs row (docs/extending.md).
Config choices (`model.backbone`, which backbones TSM can shift), the CLI, the tests and the
docs table all read this registry.

Each entry records how to build the network without its classifier, the input size and
preprocessing it was trained with, the width of its pooled features and the no-top
ImageNet weight file its publisher gives (name, URL and digest). A test network (`test_*`,
as timm names its own) has no weight file: it exists so that tests and smoke runs train the
real pipeline in seconds (`weights` None).

Digests: Keras publishes 32-hex-digit MD5 digests for its files (its `get_file` picks MD5
for any hash that is not 64 digits long), not SHA-256, and none at all for MobileNetV2; the
registry records exactly that (`hash_algorithm` is "md5" or None). Every file still has a
digest: one with none published is marked `sha256_recorded_at_install`, its SHA-256
recorded by the local store when it installs the file and checked on every use, and a store
copy that no installation recorded is refused (see actrec.backbones.pretrained).

Importing this module imports neither Keras nor anything of actrec but its errors and the
families' spec modules (standard library only).
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil

import actrec.backbones
from actrec.backbones.spec import (
    BackboneFamily,
    BackboneSpec,
    ClipNetworkSpec,
    PublishedLayout,
    ShiftBlocks,
    WeightsFile,
)
from actrec.errors import ConfigError


def _found_families() -> list[BackboneFamily]:
    """Every family folder's FAMILY, in their `position` order."""
    names = sorted(
        module.name for module in pkgutil.iter_modules(actrec.backbones.__path__) if module.ispkg
    )
    # A family is found by its folder's name, so its spec module is imported by that name.
    families = [importlib.import_module(f"actrec.backbones.{name}.spec").FAMILY for name in names]
    for name, family in zip(names, families, strict=True):
        if family.name != name or any(spec.family != name for spec in family.specs):
            raise ConfigError(
                f"actrec.backbones.{name}: its FAMILY and specs must be named {name!r}"
            )
    return sorted(families, key=lambda family: family.position)


FAMILIES: dict[str, BackboneFamily] = {family.name: family for family in _found_families()}
"""Every backbone family, by its folder's name, in listing order."""

BACKBONES: dict[str, BackboneSpec] = {
    spec.name: spec for family in FAMILIES.values() for spec in family.specs
}

CLIP_NETWORKS: dict[str, ClipNetworkSpec] = {
    network.name: network for family in FAMILIES.values() for network in family.clip_networks
}
"""Every clip network's size (VideoMAE's ViT-S, B, ...), by name (a recipe's model.backbone
under its family's clip_architecture)."""

CLIP_FAMILIES: dict[str, BackboneFamily] = {
    family.clip_architecture: family
    for family in FAMILIES.values()
    if family.clip_architecture is not None
}
"""The families of clip networks by the model.architecture they provide ("videomae")."""

SHIFT_BLOCKS: dict[str, ShiftBlocks] = {
    family.shift.name: family.shift for family in FAMILIES.values() if family.shift is not None
}
"""Where TSM shifts each shift family's networks, by name (a spec's `shift_family`)."""

PUBLISHED_LAYOUTS: dict[str, PublishedLayout] = {
    family.published_layout.name: family.published_layout
    for family in FAMILIES.values()
    if family.published_layout is not None
}
"""The PyTorch layouts published files come in, by the name the published sources use."""


def keras_layer_modules() -> list:
    """The family folders' modules that register Keras classes (FAMILY's keras_layers),
    imported: this imports Keras."""
    return [
        importlib.import_module(f"actrec.backbones.{family.name}.{module}")
        for family in FAMILIES.values()
        for module in family.keras_layers
    ]


def clip_stream_modules() -> list:
    """The family folders' modules that stream a causal clip network frame by frame
    (FAMILY's clip_stream), imported: this imports Keras."""
    return [
        importlib.import_module(f"actrec.backbones.{family.name}.{family.clip_stream}")
        for family in FAMILIES.values()
        if family.clip_stream
    ]


def backbone_names() -> list[str]:
    """Returns the registered backbone names, in registry order."""
    return list(BACKBONES)


def backbone_spec(name: str) -> BackboneSpec:
    """Returns the registry entry for `name`; an unknown name raises ConfigError."""
    try:
        return BACKBONES[name]
    except KeyError:
        close = difflib.get_close_matches(str(name).replace("-", "_").lower(), BACKBONES, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ConfigError(
            f"unknown backbone {name!r}{hint}; choose one of: {', '.join(BACKBONES)}"
        ) from None


def network_preprocessing(name: str) -> str:
    """The preprocessing mode a backbone or clip network `name` was trained with."""
    if name in CLIP_NETWORKS:
        return CLIP_NETWORKS[name].preprocessing
    return backbone_spec(name).preprocessing


def clip_family(architecture: str) -> BackboneFamily | None:
    """The family that provides clip architecture `architecture` (None: a segment model's
    "tsn" / "tsm")."""
    return CLIP_FAMILIES.get(architecture)


def clip_network_names(architecture: str) -> list[str]:
    """The sizes (model.backbone values) of clip architecture `architecture`."""
    family = CLIP_FAMILIES.get(architecture)
    return [network.name for network in family.clip_networks] if family else []


def clip_network(architecture: str, name: str) -> ClipNetworkSpec:
    """The size `name` of clip architecture `architecture`; ConfigError naming the sizes
    when it is none of them."""
    names = clip_network_names(architecture)
    if name not in names:
        close = difflib.get_close_matches(str(name).replace("-", "_").lower(), names, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ConfigError(
            f"{name!r} is not a {architecture} network{hint}; choose one of: {', '.join(names)}"
        )
    return CLIP_NETWORKS[name]


def published_weights(spec: BackboneSpec) -> WeightsFile:
    """Returns `spec`'s ImageNet weight file; ConfigError for a test network, which has
    none."""
    if spec.weights is None:
        raise ConfigError(
            f"backbone {spec.name!r} is a test network with no ImageNet weights: use "
            "model.weights=none with it, or a backbone with published weights "
            f"({', '.join(weighted_backbone_names())})"
        )
    return spec.weights


def weighted_backbone_names() -> list[str]:
    """The backbones that have an ImageNet weight file (all but the test networks)."""
    return [name for name, spec in BACKBONES.items() if spec.weights is not None]


def spec_for_weights_file(file_name: str) -> BackboneSpec | None:
    """Returns the backbone whose published no-top weight file (or, for a PyTorch layout,
    the published PyTorch file) is called `file_name`."""
    for spec in BACKBONES.values():
        if spec.weights and file_name in (spec.weights.file_name, spec.weights.source_file_name):
            return spec
    return None


def shiftable_backbone_names() -> list[str]:
    """The backbones TSM can insert temporal shifts into (those with a shift_family)."""
    return [name for name, spec in BACKBONES.items() if spec.shift_family is not None]


def shift_blocks(spec: BackboneSpec) -> ShiftBlocks:
    """Returns where TSM shifts `spec`'s network; ConfigError when it cannot be shifted."""
    if spec.shift_family not in SHIFT_BLOCKS:
        raise ConfigError(
            f"temporal shift is not available for backbone {spec.name!r}; it is "
            f"inserted into residual blocks of: {', '.join(shiftable_backbone_names())} (use "
            "one of them, or build a TSN without shift)"
        )
    return SHIFT_BLOCKS[spec.shift_family]
