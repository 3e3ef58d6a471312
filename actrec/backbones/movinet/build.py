"""The MoViNet classifier and its endpoints, as Keras functional models.

clip [B, T, H, W, 3] (RGB in [0, 1], the Model Garden's input)
  -> stem            1x3x3 convolution, stride 1x2x2, BatchNorm, activation
  -> block{s}_layer{i}  the bottlenecks of the five stages
  -> head            1x1 projection, BatchNorm, activation, mean over frames and pixels  [B, F]
  -> classifier_hidden (Dense head_filters), its activation, dropout
  -> classifier      [B, K] logits
"""

from __future__ import annotations

import keras
from keras import layers

from actrec.backbones.movinet.blocks import MovinetBlock, MovinetHead
from actrec.backbones.movinet.layers import MovinetActivation, MovinetConv
from actrec.backbones.movinet.spec import BASE, MovinetNetwork, MovinetSettings, MovinetSpec
from actrec.errors import ConfigError

FEATURES_LAYER = "head"
"""The layer whose output is the clip feature [B, project_filters]."""
INPUT_SCALE = "input_scale"
"""A recipe network's [0, 255] -> [0, 1] scaling (after its preprocessing layer)."""


def movinet_layers(spec: MovinetSpec, settings: MovinetSettings) -> list:
    """The backbone's layers in order: the stem, every bottleneck, the head."""
    common = dict(conv_type=settings.conv_type)
    found = [
        MovinetConv(
            spec.stem_filters, (1, 3, 3), (1, 2, 2), causal=settings.causal,
            activation=settings.activation, name="stem", **common,
        )
    ]  # fmt: skip
    names = iter(spec.layer_names())
    for stage in spec.stages:
        for expand, kernel, strides in zip(
            stage.expand_filters, stage.kernel_sizes, stage.strides, strict=True
        ):
            found.append(
                MovinetBlock(
                    stage.base_filters, expand, kernel, strides, causal=settings.causal,
                    se_type=settings.se_type, activation=settings.activation,
                    gating_activation=settings.gating_activation,
                    positional_encoding=settings.positional_encoding, name=next(names), **common,
                )
            )  # fmt: skip
    found.append(
        MovinetHead(spec.project_filters, activation=settings.activation, name="head", **common)
    )
    return found


def movinet_classifier(
    spec: MovinetSpec,
    num_classes: int,
    settings: MovinetSettings = BASE,
    num_frames: int | None = None,
    image_size: tuple[int, int] | None = None,
    dropout: float = 0.0,
    name: str | None = None,
    preprocessing: keras.layers.Layer | None = None,
    input_name: str = "clip",
) -> keras.Model:
    """A MoViNet clip classifier: [B, num_frames, H, W, 3] in [0, 1] -> logits [B, K]
    (defaults: the size's published frames and image size). Causal settings make the
    classifier of a stream (actrec.backbones.movinet.stream runs it frame by frame).
    preprocessing: a layer applied to the input first, then a scale by 1 / 255 (a recipe's
    frames in [0, 255]); None: the input is in [0, 1] already."""
    frames = num_frames or spec.frames
    height, width = image_size or (spec.image_size, spec.image_size)
    clip = keras.Input((frames, height, width, 3), name=input_name)
    x = clip
    if preprocessing is not None:
        x = layers.Rescaling(1.0 / 255.0, name=INPUT_SCALE)(preprocessing(x))
    for layer in movinet_layers(spec, settings):
        x = layer(x)
    x = layers.Dense(spec.head_filters, name="classifier_hidden")(x)
    x = MovinetActivation(settings.classifier_activation, name="classifier_activation")(x)
    if dropout:
        x = layers.Dropout(dropout, name="head_dropout")(x)
    logits = layers.Dense(num_classes, dtype="float32", name="classifier")(x)
    suffix = "_stream" if settings.causal else "_base"
    return keras.Model(clip, logits, name=name or spec.name + suffix)


def recipe_network(
    network: MovinetNetwork,
    num_classes: int,
    *,
    num_frames: int,
    input_size: int,
    dropout: float = 0.0,
    drop_path_rate: float = 0.0,
    remat: bool = False,
    preprocessing: keras.layers.Layer | None = None,
    seed: int | None = None,
    name: str | None = None,
) -> keras.Model:
    """A recipe's MoViNet (the registry's clip_builder, actrec.backbones.spec.ClipNetworkSpec):
    frames [B, num_frames, input_size, input_size, 3] in [0, 255] (the input "frames") ->
    logits [B, num_classes]; the frames are consecutive at the model's rate (MoViNet's dense
    sampling: data.sampling dense). Stochastic depth and remat are not MoViNet's yet."""
    if drop_path_rate or remat:
        raise ConfigError(
            f"{network.name}: model.drop_path_rate and model.remat are not available for "
            "MoViNet yet; leave them at 0 / false"
        )
    if preprocessing is None:
        preprocessing = layers.Identity(name="preprocessing")
    return movinet_classifier(
        network.size, num_classes, network.settings, num_frames=num_frames,
        image_size=(input_size, input_size), dropout=dropout, name=name,
        preprocessing=preprocessing, input_name="frames",
    )  # fmt: skip


def backbone_layer_names(classifier: keras.Model) -> list[str]:
    """The names of the stem, the bottlenecks and the head, in order."""
    kinds = (MovinetConv, MovinetBlock, MovinetHead)
    return [layer.name for layer in classifier.layers if isinstance(layer, kinds)]


def endpoint_model(classifier: keras.Model) -> keras.Model:
    """The classifier's endpoints: [B, T, H, W, 3] -> {stem, block{s}_layer{i}, head}
    (the Model Garden backbone's endpoints)."""
    names = backbone_layer_names(classifier)
    return keras.Model(
        classifier.inputs, {name: classifier.get_layer(name).output for name in names}
    )


def feature_model(classifier: keras.Model) -> keras.Model:
    """The classifier's clip features: [B, T, H, W, 3] -> [B, project_filters]."""
    return keras.Model(classifier.inputs, classifier.get_layer(FEATURES_LAYER).output)
