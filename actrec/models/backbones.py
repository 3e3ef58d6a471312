"""The backbones as networks: keras.applications' no-top models (or actrec.models.torch_layout's
for a PyTorch layout), randomly initialised.

Which backbones exist and what each supports is the registry actrec.config.backbones.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from actrec.config.backbones import BackboneSpec, backbone_spec

if TYPE_CHECKING:
    import keras


def backbone_constructor(spec: BackboneSpec):
    """Returns the function that builds `spec`'s backbone: keras.applications', or
    actrec.models.torch_layout's for a PyTorch layout."""
    if spec.layout == "pytorch":
        from actrec.models import torch_layout

        return getattr(torch_layout, spec.constructor)
    import keras

    return getattr(keras.applications, spec.constructor)


def build_plain_backbone(name: str, input_shape: tuple[int | None, int | None, int]) -> keras.Model:
    """Returns keras.applications' no-top network `name`, randomly initialised.

    input_shape: [H, W, C]; C may differ from 3 (flow stacks). Its output is the globally
    average-pooled feature vector, [N, feature_width]. This is exactly the network Keras
    loads the published weight file into (see `build_backbone` for actrec's own version).
    """
    spec = backbone_spec(name)
    constructor = backbone_constructor(spec)
    with warnings.catch_warnings():
        # "This model usually expects 1 or 3 input channels": flow stacks have 2L.
        warnings.filterwarnings("ignore", message=".*input channels.*")
        warnings.filterwarnings("ignore", message=".*input_shape.*")
        return constructor(
            include_top=False,
            weights=None,
            input_shape=tuple(input_shape),
            pooling="avg",
            **spec.constructor_arguments,
        )


def build_backbone(name: str, input_shape: tuple[int | None, int | None, int]) -> keras.Model:
    """Returns the no-top backbone `name` as actrec uses it, randomly initialised.

    input_shape: [H, W, C]. Output: [N, feature_width] (global average pooling).

    It is `build_plain_backbone` with every BatchNormalization trained by TensorFlow's fused
    kernel (actrec.models.fused_batch_norm: the same values, faster). For EfficientNet (v1)
    it also inserts the weightless rescaling Keras adds only when it loads ImageNet weights
    itself (keras/src/applications/efficientnet.py, keras issue tensorflow#49930), so that
    the published weights see the input scale they were trained on.
    """
    from actrec.models.fused_batch_norm import with_fused_batch_normalization

    spec = backbone_spec(name)
    model = with_fused_batch_normalization(build_plain_backbone(name, input_shape))
    if spec.constructor.startswith("EfficientNetB"):
        from actrec.models.graph_edit import efficientnet_with_imagenet_rescaling

        model = efficientnet_with_imagenet_rescaling(model)
    return model
