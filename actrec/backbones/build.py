"""The backbones as networks, built by their family folder's build.py, randomly initialised.

Which backbones exist and what each supports is the registry actrec.backbones.registry.
A family's build.py defines `plain_network(spec, input_shape)`, the network its published
weight file is written from, and may define `imagenet_ready(network)`, what actrec adds to
it so that the published weights see the input they were trained on (EfficientNet's
rescaling).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType

import keras

from actrec.backbones.fused_batch_norm import fused_copy, with_fused_batch_normalization
from actrec.backbones.graph_edit import InputTransform, rebuild_with_input_transform
from actrec.backbones.spec import BackboneSpec

InputEdit = Callable[[keras.Model], InputTransform]
"""network -> the InputTransform that rebuilds it (e.g. TSM's shifts, placed by the
network's layer names: actrec.models.temporal_shift.temporal_shift_transform)."""


def family_builder(spec: BackboneSpec) -> ModuleType:
    """Returns the build.py module of `spec`'s family (actrec.backbones.<family>.build)."""
    # Found by the family's name, as the registry finds its spec module.
    return importlib.import_module(f"actrec.backbones.{spec.family}.build")


def build_plain_backbone(
    spec: BackboneSpec, input_shape: tuple[int | None, int | None, int]
) -> keras.Model:
    """Returns the no-top network `spec`, randomly initialised: keras.applications' (or its
    family's PyTorch layout), exactly the network its published weight file is loaded into
    (see `build_backbone` for actrec's own version).

    input_shape: [H, W, C]; C may differ from 3 (flow stacks). Output: the globally
    average-pooled feature vector, [N, feature_width].
    """
    return family_builder(spec).plain_network(spec, input_shape)


def build_backbone(
    spec: BackboneSpec,
    input_shape: tuple[int | None, int | None, int],
    edit: InputEdit | None = None,
) -> keras.Model:
    """Returns the no-top backbone `spec` as actrec uses it, randomly initialised.

    input_shape: [H, W, C]. Output: [N, feature_width] (global average pooling).

    It is `build_plain_backbone` with every BatchNormalization trained by TensorFlow's fused
    kernel (actrec.backbones.fused_batch_norm: the same values, faster), then its family's
    `imagenet_ready` when it has one (EfficientNet v1: the weightless rescaling Keras adds
    only when it loads ImageNet weights itself), then rebuilt by `edit` when given (TSM's
    shifts). Without `imagenet_ready`, the fused layers and the edit come in one rebuild
    (a TSM MobileNetV2 builds in three quarters of the time of two; the same random draws
    in the same order, so the same initial weights).
    """
    builder = family_builder(spec)
    plain = builder.plain_network(spec, input_shape)
    imagenet_ready = getattr(builder, "imagenet_ready", None)
    if edit is not None and imagenet_ready is None:
        return rebuild_with_input_transform(plain, edit(plain), clone_function=fused_copy)
    model = with_fused_batch_normalization(plain)
    if imagenet_ready is not None:
        model = imagenet_ready(model)
    return model if edit is None else rebuild_with_input_transform(model, edit(model))
