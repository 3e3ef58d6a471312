"""Per-parameter learning-rate and weight-decay multipliers, assigned by rule.

The official TSN and TSM code give every parameter a learning-rate multiplier (lr_mult)
and a weight-decay multiplier (decay_mult):

    group               lr_mult                      decay_mult
    first_conv_weight   first_conv (flow: 5)         1
    first_conv_bias     first_conv * bias (flow: 10) 0
    normal_weight       1                            1
    normal_bias         bias (2)                     0
    batch_norm          1                            0   (gamma, beta of trainable BN layers)
    classifier_weight   classifier (TSM: 5)          1
    classifier_bias     classifier * bias (TSM: 10)  0

Sources: yjxiong/tsn-pytorch models.py `get_optim_policies` (lines 139-188: first conv
x5 / bias x10 for flow, biases x2, BN and biases without decay); mit-han-lab/
temporal-shift-module ops/models.py lines 193-261 (the same, plus `fc_lr5`: the new
classifier x5, its bias x10); the TSN Caffe prototxts (models/ucf101/
tsn_bn_inception_flow_train_val.prototxt line 53: conv1 lr_mult 5 / 10, every BN
`decay_mult: 0`, every bias lr_mult 2 decay_mult 0). The products (first conv bias,
classifier bias) reproduce the sources' 10 from 5 x 2.

Rules, applied to the model's trainable variables (frozen BatchNorm layers of partial BN
have none, as in the sources where they are left out of the optimizer):
- the first convolution is the first convolution layer in the model's layer order (the
  backbone's stem: ResNet `conv1_conv`, MobileNetV2 `Conv1`);
- the classifier is the Dense layer named `classifier` (actrec.models.segment_model);
- a bias is the `bias` of a convolution or Dense layer;
- BatchNorm parameters are the `gamma` / `beta` of a BatchNormalization layer;
- any other trainable variable of rank <= 1 takes no decay (like a bias, lr_mult 1): a
  LayerNorm's gamma / beta, a transformer's layer scale (VideoMAE's no-weight-decay rule:
  1-D parameters and biases).

With train.layer_decay d < 1 (actrec.train.loop.layer_decay) every group is split by
layer id k of a transformer of L blocks into `layer_<k>_<group>`, whose lr_mult is the
group's times d ** (L + 1 - k).

This module imports Keras only inside `parameter_groups`.
"""

from __future__ import annotations

from dataclasses import dataclass

from actrec.config.recipe import TrainConfig
from actrec.errors import ConfigError
from actrec.train.loop.layer_decay import layer_rate_scales, variable_layer_ids

CLASSIFIER_LAYER = "classifier"
GROUP_NAMES = (
    "first_conv_weight",
    "first_conv_bias",
    "normal_weight",
    "normal_bias",
    "batch_norm",
    "classifier_weight",
    "classifier_bias",
    "other_vector",
)


def group_multipliers(train: TrainConfig, group: str) -> tuple[float, float]:
    """(lr_mult, decay_mult) of a group in GROUP_NAMES under the learning-rate multipliers
    of a recipe's train section (train.*_lr_mult, checked by actrec.config; 1 means none)."""
    bias, first_conv = train.bias_lr_mult, train.first_conv_lr_mult
    classifier = train.classifier_lr_mult
    table = {
        "first_conv_weight": (first_conv, 1.0),
        "first_conv_bias": (first_conv * bias, 0.0),
        "normal_weight": (1.0, 1.0),
        "normal_bias": (bias, 0.0),
        "batch_norm": (1.0, 0.0),
        "classifier_weight": (classifier, 1.0),
        "classifier_bias": (classifier * bias, 0.0),
        "other_vector": (1.0, 0.0),
    }
    return table[group]


@dataclass(frozen=True)
class ParameterGroup:
    """Trainable variables that share a learning-rate and a weight-decay multiplier."""

    name: str
    lr_mult: float
    decay_mult: float
    variables: tuple
    layer: int | None = None  # the layer id under train.layer_decay, else None

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(variable.path for variable in self.variables)


def _leaf_layers(model) -> list:
    """Every layer of `model` that is not itself a model, in layer order (nested models
    expanded where they appear)."""
    import keras

    found = []
    for layer in model.layers:
        if isinstance(layer, keras.Model):
            found.extend(_leaf_layers(layer))
        else:
            found.append(layer)
    return found


def _is_convolution(layer) -> bool:
    import keras

    kinds = (
        keras.layers.Conv1D,
        keras.layers.Conv2D,
        keras.layers.Conv3D,
        keras.layers.DepthwiseConv1D,
        keras.layers.DepthwiseConv2D,
        keras.layers.SeparableConv1D,
        keras.layers.SeparableConv2D,
    )
    return isinstance(layer, kinds)


def _layer_roles(layer, is_first_conv: bool) -> dict[int, str]:
    """id(variable) -> group name for the trainable variables a layer owns."""
    import keras

    roles = {}
    if isinstance(layer, keras.layers.BatchNormalization):
        for variable in layer.trainable_weights:
            roles[id(variable)] = "batch_norm"
        return roles
    is_classifier = isinstance(layer, keras.layers.Dense) and layer.name == CLASSIFIER_LAYER
    if is_first_conv:
        prefix = "first_conv"
    elif is_classifier:
        prefix = "classifier"
    else:
        prefix = "normal"
    if _is_convolution(layer) or isinstance(layer, keras.layers.Dense):
        bias = getattr(layer, "bias", None)
        for variable in layer.trainable_weights:
            suffix = "bias" if bias is not None and variable is bias else "weight"
            roles[id(variable)] = f"{prefix}_{suffix}"
    return roles


def parameter_groups(model, train: TrainConfig | None = None) -> list[ParameterGroup]:
    """The groups (in GROUP_NAMES order, empty ones left out) of `model`'s trainable
    variables under `train`'s multipliers (None: none); every trainable variable is in
    exactly one group.

    ConfigError when a multiplier other than 1 names a layer the model does not have (a
    first-conv multiplier without any convolution, a classifier multiplier without a
    Dense layer named `classifier`)."""
    train = train or TrainConfig()
    layers = _leaf_layers(model)
    first_conv = next((layer for layer in layers if _is_convolution(layer)), None)
    roles: dict[int, str] = {}
    for layer in layers:
        roles.update(_layer_roles(layer, layer is first_conv))
    trainable = model.trainable_variables
    by_group: dict[str, list] = {name: [] for name in GROUP_NAMES}
    for variable in trainable:
        group = roles.get(id(variable))
        if group is None:
            group = "other_vector" if len(variable.shape) <= 1 else "normal_weight"
        by_group[group].append(variable)
    if train.first_conv_lr_mult != 1 and first_conv is None:
        raise ConfigError(
            f"first_conv_lr_mult={train.first_conv_lr_mult:g} but model {model.name!r} has no "
            "convolution layer; use 1"
        )
    has_classifier = bool(by_group["classifier_weight"] or by_group["classifier_bias"])
    if train.classifier_lr_mult != 1 and not has_classifier:
        raise ConfigError(
            f"classifier_lr_mult={train.classifier_lr_mult:g} but model {model.name!r} has no "
            f"trainable Dense layer named {CLASSIFIER_LAYER!r}; use 1"
        )
    if train.layer_decay != 1:
        return _layer_groups(model, train, by_group)
    return [
        ParameterGroup(name, *group_multipliers(train, name), tuple(variables))
        for name, variables in by_group.items()
        if variables
    ]


def _layer_groups(model, train: TrainConfig, by_group: dict[str, list]) -> list[ParameterGroup]:
    """The rule groups split by layer id (in layer order, then GROUP_NAMES order), each
    lr_mult times its layer's scale (actrec.train.loop.layer_decay)."""
    depth, layer_ids = variable_layer_ids(model)
    scales = layer_rate_scales(depth, train.layer_decay)
    groups = []
    for layer, scale in enumerate(scales):
        for name, variables in by_group.items():
            chosen = tuple(v for v in variables if layer_ids.get(id(v), depth + 1) == layer)
            if chosen:
                lr_mult, decay_mult = group_multipliers(train, name)
                groups.append(
                    ParameterGroup(
                        f"layer_{layer}_{name}", lr_mult * scale, decay_mult, chosen, layer
                    )
                )
    return groups


def group_summary(groups: list[ParameterGroup]) -> list[dict]:
    """One JSON-ready row per group: name, lr_mult, decay_mult, variables (count)."""
    return [
        {
            "name": group.name,
            "lr_mult": group.lr_mult,
            "decay_mult": group.decay_mult,
            "variables": len(group.variables),
        }
        for group in groups
    ]
