"""TSN and TSM segment models: a keras.applications backbone over B*T frames, dropout,
a linear classifier per segment, and the average of the segment logits.

    frames [B, T, H, W, C]            C = 3 (RGB) or 2L (L stacked flow fields, x and y)
      -> preprocessing                 [B, T, H, W, C]   (inputs in [0, 255])
      -> merge segments                [B*T, H, W, C]
      -> backbone (+ TemporalShift)    [B*T, F]          global average pooled
      -> dropout, classifier           [B*T, K]
      -> average consensus             [B, K]            logits (softmax comes later)

TSN (Wang et al. 2016) uses partial BN by default; TSM (Lin et al. 2019) is the same
network with TemporalShift in the backbone's residual branches, and the same weights.
The segment count is fixed in the graph; to evaluate with another T, build the model again
with that `num_segments` and copy the weights (they do not depend on T).
"""

from __future__ import annotations

from pathlib import Path

import keras
from keras import ops

from actrec.backbones.build import build_backbone
from actrec.backbones.pretrained import resolve_weights
from actrec.backbones.registry import backbone_spec
from actrec.backbones.spec import BackboneSpec
from actrec.config.choices import MODALITIES, SEGMENT_ARCHITECTURES, SHIFT_DIRECTIONS
from actrec.errors import ConfigError
from actrec.models.initialisation import finalize_layer_state, load_imagenet_weights
from actrec.models.preprocessing import FramePreprocessing
from actrec.models.remat import rematerialise
from actrec.models.temporal_shift import DEFAULT_FOLD_FRACTION, temporal_shift_transform

DEFAULT_FLOW_LENGTH = 5
CLASSIFIER_INIT_STDDEV = 0.001  # TSN's initialisation of the new classifier
POOLED_FEATURES_LAYER = "dropout"
"""The layer whose input is the backbone's pooled features [B*T, F] (distillation reads them)."""


@keras.saving.register_keras_serializable(package="actrec")
class MergeSegments(keras.layers.Layer):
    """[B, T, H, W, C] -> [B*T, H, W, C]; no weights."""

    def call(self, inputs):
        shape = ops.shape(inputs)
        return ops.reshape(inputs, (-1, *shape[2:]))  # [B*T, H, W, C]

    def compute_output_shape(self, input_shape):
        batch, segments = input_shape[0], input_shape[1]
        merged = None if batch is None or segments is None else batch * segments
        return (merged, *input_shape[2:])


@keras.saving.register_keras_serializable(package="actrec")
class SegmentConsensus(keras.layers.Layer):
    """Average consensus: [B*T, K] -> [B, T, K] -> mean over T -> [B, K]; no weights."""

    def __init__(self, num_segments: int, **kwargs):
        super().__init__(**kwargs)
        self.num_segments = int(num_segments)

    def call(self, inputs):
        classes = inputs.shape[-1]
        per_segment = ops.reshape(inputs, (-1, self.num_segments, classes))  # [B, T, K]
        return ops.mean(per_segment, axis=1)  # [B, K]

    def compute_output_shape(self, input_shape):
        batch = input_shape[0]
        return (None if batch is None else batch // self.num_segments, input_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update(num_segments=self.num_segments)
        return config


@keras.saving.register_keras_serializable(package="actrec")
class SplitSegments(keras.layers.Layer):
    """[B*T, F] -> [B, T, F] (the segments of each clip apart); no weights."""

    def __init__(self, num_segments: int, **kwargs):
        super().__init__(**kwargs)
        self.num_segments = int(num_segments)

    def call(self, inputs):
        return ops.reshape(inputs, (-1, self.num_segments, inputs.shape[-1]))  # [B, T, F]

    def compute_output_shape(self, input_shape):
        batch = input_shape[0]
        batch = None if batch is None else batch // self.num_segments
        return (batch, self.num_segments, input_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update(num_segments=self.num_segments)
        return config


def batch_normalization_layers(model: keras.Model) -> list[keras.layers.BatchNormalization]:
    """Returns the BatchNormalization layers of `model` (nested models included), in order."""
    found = []
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            found.append(layer)
        elif isinstance(layer, keras.Model):
            found.extend(batch_normalization_layers(layer))
    return found


def apply_partial_batch_normalization(backbone: keras.Model) -> None:
    """Freezes every BatchNormalization layer of `backbone` but the first (TSN's partial
    BN): frozen layers use and keep their moving statistics (Keras 3 runs a non-trainable
    BatchNormalization in inference mode) and their scale and offset do not train.
    Setting `trainable` on the model or backbone afterwards overrides this; call it again."""
    layers = batch_normalization_layers(backbone)
    for index, layer in enumerate(layers):
        layer.trainable = index == 0


def channels_for(modality: str, new_length: int) -> int:
    """Returns the input channels of one segment: 3 for RGB, 2L for flow."""
    if modality == "rgb":
        if new_length != 1:
            raise ConfigError(f"RGB segments have new_length 1, got {new_length}")
        return 3
    return 2 * new_length


def build_segment_backbone(
    spec: BackboneSpec,
    input_shape: tuple[int | None, int | None, int],
    architecture: str = "tsn",
    num_segments: int = 8,
    shift_fraction: float = DEFAULT_FOLD_FRACTION,
    shift_placement: str = "blockres",
    shift_direction: str = "bidirectional",
) -> keras.Model:
    """Returns the randomly initialised backbone of a segment model: [N*T, H, W, C] ->
    [N*T, F], with TemporalShift layers when `architecture` is "tsm"."""
    if architecture not in SEGMENT_ARCHITECTURES:
        raise ConfigError(
            f"unknown segment architecture {architecture!r}; choose one of: "
            f"{', '.join(SEGMENT_ARCHITECTURES)} (a clip network is built by "
            "actrec.models.factory)"
        )
    if shift_direction not in SHIFT_DIRECTIONS:
        raise ConfigError(
            f"unknown shift direction {shift_direction!r}; choose one of: "
            f"{', '.join(SHIFT_DIRECTIONS)}"
        )
    if architecture != "tsm":
        return build_backbone(spec, input_shape)
    return build_backbone(
        spec,
        input_shape,
        edit=lambda network: temporal_shift_transform(
            network,
            spec,
            num_segments,
            fold_fraction=shift_fraction,
            placement=shift_placement,
            online=shift_direction == "online",
        ),
    )


def initialise_backbone(
    network: keras.Model,
    spec: BackboneSpec,
    weights: str | Path | None,
    allow_download: bool = False,
) -> None:
    """Loads ImageNet weights into `network`, the backbone of registry entry `spec` (RGB or
    flow, with cross-modality init).

    weights: "imagenet" (resolved through the store, see actrec.backbones.pretrained), a path
    to a no-top weight file as keras.applications writes it, or None (random).
    """
    if weights is None:
        return
    explicit = None if str(weights) == "imagenet" else Path(weights)
    path = resolve_weights(spec, explicit, allow_download=allow_download)
    load_imagenet_weights(network, spec, path)


def build_segment_model(
    backbone: str,
    num_classes: int,
    *,
    architecture: str = "tsn",
    modality: str = "rgb",
    num_segments: int = 8,
    new_length: int | None = None,
    input_size: int | None = None,
    dropout: float = 0.5,
    partial_bn: bool | None = None,
    shift_fraction: float = DEFAULT_FOLD_FRACTION,
    shift_placement: str = "blockres",
    shift_direction: str = "bidirectional",
    weights: str | Path | None = "imagenet",
    allow_download: bool = False,
    include_preprocessing: bool = True,
    name: str | None = None,
    remat: bool = False,
    batch_norm_momentum: float | None = None,
    preprocessing: str | None = None,
    drop_path_rate: float = 0.0,
    network: tuple[str, ...] = (),
) -> keras.Model:
    """Returns a TSN or TSM model: frames [B, T, H, W, C] -> segment-averaged logits [B, K].

    backbone: a registered name (actrec.backbones.registry); its spec is looked up once here
    and passed on.
    architecture: "tsn", or "tsm" (TemporalShift; ResNet family and MobileNetV2 only).
    modality: "rgb" (C = 3) or "flow" (C = 2 * new_length; new_length defaults to 5).
    input_size: frame side in pixels (default: the backbone's own).
    partial_bn: freeze every BatchNorm but the first; default True for TSN, False for TSM.
    shift_fraction / shift_placement / shift_direction: TSM's fold fraction (1/8),
    "blockres" or "block", and "bidirectional" or "online" (one-directional, for streaming).
    weights: "imagenet", a no-top weight file, or None / "none" (random; see
    `initialise_backbone`).
    include_preprocessing: inputs in [0, 255] (RGB, or flow with 128 = no motion) are
    normalised inside the model; False when the input pipeline does it
    (actrec.models.preprocessing.channel_normalisation gives the numbers).
    remat: recompute the backbone's block activations in the backward pass instead of
    keeping them (actrec.models.remat): less memory, the same values, gradients and weight
    layout, about one more backbone forward pass per step.
    batch_norm_momentum: every BatchNorm's momentum; None keeps the backbone's own.
    preprocessing: the input normalisation (actrec.backbones.spec.PREPROCESSING_MODES);
    None: the backbone's own.
    drop_path_rate / network: a clip network's stochastic depth and shape settings; a
    segment model has neither (0, ()).

    The keyword names are actrec.config.ModelConfig's fields (keras-hub style: the recipe's
    model section is the constructor's arguments; actrec.models.factory passes it whole).
    """
    spec = backbone_spec(backbone)
    if modality not in MODALITIES:
        raise ConfigError(f"unknown modality {modality!r}; choose one of: {', '.join(MODALITIES)}")
    if num_classes < 1:
        raise ConfigError(f"num_classes must be at least 1, got {num_classes}")
    if num_segments < 1:
        raise ConfigError(f"num_segments must be at least 1, got {num_segments}")
    if not 0 <= dropout < 1:
        raise ConfigError(f"dropout must be in [0, 1), got {dropout}")
    if drop_path_rate or network:
        raise ConfigError(
            f"drop_path_rate={drop_path_rate}, network={list(network)}: a segment model has no "
            "stochastic depth or clip network settings; use 0 and ()"
        )
    if new_length is None:
        new_length = 1 if modality == "rgb" else DEFAULT_FLOW_LENGTH
    if new_length < 1:
        raise ConfigError(f"new_length must be at least 1, got {new_length}")
    channels = channels_for(modality, new_length)
    size = input_size or spec.default_input_size
    if partial_bn is None:
        partial_bn = architecture == "tsn"

    network = build_segment_backbone(
        spec,
        (size, size, channels),
        architecture,
        num_segments,
        shift_fraction,
        shift_placement,
        shift_direction,
    )
    initialise_backbone(network, spec, None if weights == "none" else weights, allow_download)
    if partial_bn:
        apply_partial_batch_normalization(network)
    if remat:
        rematerialise(network)
    if batch_norm_momentum is not None:
        for layer in batch_normalization_layers(network):
            layer.momentum = batch_norm_momentum

    frames = keras.Input((num_segments, size, size, channels), name="frames")  # [B, T, H, W, C]
    x = frames
    if include_preprocessing:
        mode = preprocessing or spec.preprocessing
        x = FramePreprocessing(mode, modality, name="preprocessing")(x)
    x = MergeSegments(name="merge_segments")(x)  # [B*T, H, W, C]
    x = network(x)  # [B*T, F]
    x = keras.layers.Dropout(dropout, name=POOLED_FEATURES_LAYER)(x)
    x = keras.layers.Dense(
        num_classes,
        kernel_initializer=keras.initializers.RandomNormal(stddev=CLASSIFIER_INIT_STDDEV),
        name="classifier",
    )(x)  # [B*T, K]
    logits = SegmentConsensus(num_segments, dtype="float32", name="consensus")(x)  # [B, K]
    return keras.Model(frames, logits, name=name or f"{architecture}_{backbone}_{modality}")


def all_layers(model: keras.Model) -> list[keras.layers.Layer]:
    """Returns every layer of `model`, nested models' layers included."""
    found = []
    for layer in model.layers:
        found.append(layer)
        if isinstance(layer, keras.Model):
            found.extend(all_layers(layer))
    return found


def copy_model_weights(source: keras.Model, target: keras.Model) -> None:
    """Copies every weight of `source` into `target`, a model built by `build_segment_model`
    with the same backbone, modality and classes (any num_segments, TSN or TSM), and
    refreshes what layers derive from their weights (`set_weights` alone would leave
    EfficientNet's input normalisation stale)."""
    source_weights, target_weights = source.weights, target.weights
    if [tuple(w.shape) for w in source_weights] != [tuple(w.shape) for w in target_weights]:
        raise ConfigError(
            f"cannot copy the weights of {source.name!r} into {target.name!r}: their weight "
            "lists differ (build both with the same backbone, modality, classes and input)"
        )
    target.set_weights(source.get_weights())
    for layer in all_layers(target):
        finalize_layer_state(layer)


def segment_backbone(model: keras.Model) -> keras.Model:
    """Returns the backbone network nested in a model from `build_segment_model`."""
    for layer in model.layers:
        if isinstance(layer, keras.Model):
            return layer
    raise ConfigError(f"model {model.name!r} has no nested backbone network")
