"""A Model Garden MoViNet's variables (read by checkpoint_files) as the Keras network's
arrays, every tensor mapped by name and its shape checked.

The Model Garden's paths from the classifier (MovinetClassifier):

    layer_with_weights-0/                     the backbone (Movinet)
      layer_with_weights-0/_stem/             the stem, then layer_with_weights-1 ... the
      layer_with_weights-K/                   bottlenecks in order, then the head
        _expansion/ _feature/ _projection/ _skip/_projection/   ConvBlocks
        _attention/_se_reduce/ _attention/_se_expand/ [_attention/_pos_encoding/_rezero/scale]
        _mobile_bottleneck/_rezero/scale
      layer_with_weights-(N+1)/_project/
    layer_with_weights-1/_head/ _classifier/  the classifier head (1x1 convolutions)

A ConvBlock P holds P_conv/kernel (conv_type "3d", [kt, kh, kw, in, out]; "3d_2plus1d",
the spatial [1, kh, kw, ...] and P_conv_temporal/kernel [kt, 1, 1, ...]) or
P_conv/_conv/kernel | depthwise_kernel ("2plus1d": Conv2D [kh, kw, in, out] /
DepthwiseConv2D [kh, kw, C, 1], and P_conv_temporal/_conv/depthwise_kernel [kt, 1, C, 1]),
P_batch_norm/{gamma,beta,moving_mean,moving_variance} and P_batch_norm_temporal/ ((2+1)D).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from actrec.backbones.movinet.checkpoint_files import BACKBONE, MovinetVariables
from actrec.backbones.movinet.spec import (
    BASE,
    MOVINET_SPECS,
    MovinetSettings,
    MovinetSpec,
    stream_settings,
)
from actrec.errors import WeightsError

BATCH_NORM = ("gamma", "beta", "moving_mean", "moving_variance")
LAYOUTS = ("3d", "2plus1d", "3d_2plus1d")


@dataclass(frozen=True)
class SourceWeights:
    """A MoViNet file's weights for the Keras network: its size, settings, classes (0: a
    backbone alone), `arrays` (Keras path "block0_layer0/feature/conv" -> arrays in the
    layer's order), `sources` (Keras path -> the source variables) and `layout` (the
    file's conv_type, one of LAYOUTS)."""

    spec: MovinetSpec
    settings: MovinetSettings
    num_classes: int
    arrays: dict[str, list[np.ndarray]]
    sources: dict[str, list[str]]
    layout: str


def source_layout(tensors: dict, path) -> str:
    """The file's conv_type, from its stem's tensors; WeightsError naming the file when it
    has no MoViNet stem (another network's checkpoint)."""
    stem = BACKBONE + "layer_with_weights-0/_stem/_conv/"
    if stem + "_conv/kernel" in tensors:
        return "2plus1d"
    if stem + "kernel" in tensors:
        temporal = any(key.endswith("_conv_temporal/kernel") for key in tensors)
        return "3d_2plus1d" if temporal else "3d"
    raise WeightsError(
        f"{path}: not a MoViNet checkpoint: it has no {stem}kernel (the Model Garden's MoViNet "
        "stem); give a Model Garden MoViNet checkpoint or TF Hub SavedModel"
    )


def source_weights(
    variables: MovinetVariables, path: Path | str, settings: MovinetSettings | None = None
) -> SourceWeights:
    """The Keras arrays of a MoViNet file's variables. `settings`: how the network computes
    (causal, activations: no checkpoint says); None takes the published ones of the file's
    layout (3D: the base models', (2+1)D: the streams'); its conv_type, se_type and
    positional encoding are the file's. WeightsError naming the file and tensor when one is
    missing, does not fit, is not finite or is left over."""
    tensors = variables.tensors
    layout = source_layout(tensors, path)
    spec = _spec_from_tensors(tensors, path)
    first = BACKBONE + "layer_with_weights-1/"
    reduce = _first_present(
        tensors, first + "_attention/_se_reduce/_conv/", ("_conv/kernel", "kernel")
    )
    expand = spec.stages[0].expand_filters[0]
    se_type = "2plus3d" if reduce is not None and reduce.shape[-2] == 2 * expand else "3d"
    positional = first + "_attention/_pos_encoding/_rezero/scale" in tensors
    if settings is None:
        settings = BASE if layout == "3d" else stream_settings(spec.name)
    settings = replace(
        settings,
        conv_type="3d" if layout == "3d" else "2plus1d",
        se_type=se_type,
        positional_encoding=positional,
        causal=settings.causal or positional,
    )
    mapping = _Mapping(tensors, path, layout)
    _backbone_arrays(mapping, spec, settings)
    num_classes = 0
    if variables.has_classifier:
        head = "layer_with_weights-1/"
        mapping.dense("classifier_hidden", head + "_head/")
        mapping.dense("classifier", head + "_classifier/")
        num_classes = int(mapping.arrays["classifier"][1].shape[0])
    left = sorted(set(tensors) - mapping.taken)
    if left:
        raise WeightsError(
            f"{path}: {len(left)} variables do not belong to a {spec.name} classifier "
            f"({', '.join(left[:3])}{', ...' if len(left) > 3 else ''}); is it another network?"
        )
    return SourceWeights(spec, settings, num_classes, mapping.arrays, mapping.sources, layout)


def assign_weights(model, weights: SourceWeights) -> None:
    """Sets every layer's arrays from `weights` (a model of movinet_classifier with the same
    spec and settings); WeightsError naming the source tensor when a shape does not fit."""
    for path, arrays in weights.arrays.items():
        target = _keras_target(model, path)
        variables = [target] if not hasattr(target, "weights") else target.weights
        expected = [tuple(variable.shape) for variable in variables]
        got = [tuple(array.shape) for array in arrays]
        if expected != got:
            names = ", ".join(weights.sources.get(path, [path]))
            raise WeightsError(
                f"{names}: shape {got} does not fit the network's {path} {expected}; the file "
                f"is another MoViNet than {weights.spec.name}"
            )
        for variable, array in zip(variables, arrays, strict=True):
            variable.assign(array)


class _Mapping:
    """The file's tensors taken by name into Keras arrays, remembering what was taken."""

    def __init__(self, tensors: dict, path, layout: str):
        self.tensors, self.path, self.layout = tensors, path, layout
        self.arrays: dict[str, list[np.ndarray]] = {}
        self.sources: dict[str, list[str]] = {}
        self.taken: set[str] = set()

    def tensor(self, name: str) -> np.ndarray:
        if name not in self.tensors:
            raise WeightsError(f"{self.path}: tensor {name} is missing (a MoViNet file has it)")
        value = np.asarray(self.tensors[name], dtype=np.float32)
        if not np.all(np.isfinite(value)):
            raise WeightsError(
                f"{self.path}: tensor {name} has non-finite values (NaN or infinity); the file "
                "is damaged, download it again"
            )
        self.taken.add(name)
        return value

    def put(self, keras_path: str, names: list[str], arrays: list[np.ndarray]) -> None:
        self.arrays[keras_path], self.sources[keras_path] = arrays, names

    def norm(self, keras_path: str, source: str) -> None:
        names = [source + part for part in BATCH_NORM]
        self.put(keras_path, names, [self.tensor(name) for name in names])

    def dense(self, keras_path: str, source: str) -> None:
        """A 1x1 convolution with bias as a Dense layer: kernel [in, out], bias [out]."""
        spatial = "_conv/_conv/" if self.layout == "2plus1d" else "_conv/"
        names = [source + spatial + "kernel", source + spatial + "bias"]
        kernel, bias = (self.tensor(name) for name in names)
        self.put(keras_path, names, [kernel.reshape(-1, kernel.shape[-1]), bias])

    def conv(self, keras_path: str, source: str, depthwise: bool, temporal: bool) -> None:
        """A ConvBlock's convolution(s) and BatchNorm(s) as MovinetConv's."""
        if self.layout == "3d":
            self.put(
                keras_path + "/conv",
                [source + "_conv/kernel"],
                [self.tensor(source + "_conv/kernel")],
            )
            self.norm(keras_path + "/norm", source + "_batch_norm/")
            return
        if self.layout == "2plus1d":
            name = source + "_conv/_conv/" + ("depthwise_kernel" if depthwise else "kernel")
            spatial = self.tensor(name)
        else:  # 3d_2plus1d: Conv3D kernels [1, kh, kw, in, out]
            name = source + "_conv/kernel"
            spatial = self.tensor(name)[0]
            if depthwise:
                spatial = spatial.transpose(0, 1, 3, 2)  # [kh, kw, 1, C] -> [kh, kw, C, 1]
        self.put(keras_path + "/conv", [name], [spatial])
        self.norm(keras_path + "/norm", source + "_batch_norm/")
        if temporal:
            if self.layout == "2plus1d":
                name = source + "_conv_temporal/_conv/depthwise_kernel"
                kernel = self.tensor(name)
            else:  # [kt, 1, 1, 1, C] -> [kt, 1, C, 1]
                name = source + "_conv_temporal/kernel"
                kernel = self.tensor(name)[:, 0].transpose(0, 1, 3, 2)
            self.put(keras_path + "/conv_temporal", [name], [kernel])
            self.norm(keras_path + "/norm_temporal", source + "_batch_norm_temporal/")


def _backbone_arrays(mapping: _Mapping, spec: MovinetSpec, settings: MovinetSettings) -> None:
    mapping.conv("stem", BACKBONE + "layer_with_weights-0/_stem/", False, False)
    index = 0
    for stage_index, stage in enumerate(spec.stages):
        for layer_index, kernel in enumerate(stage.kernel_sizes):
            index += 1
            block, source = (
                f"block{stage_index}_layer{layer_index}",
                f"{BACKBONE}layer_with_weights-{index}/",
            )
            mapping.conv(f"{block}/expansion", source + "_expansion/", False, False)
            mapping.conv(f"{block}/feature", source + "_feature/", True, kernel[0] > 1)
            mapping.dense(f"{block}/se/reduce", source + "_attention/_se_reduce/")
            mapping.dense(f"{block}/se/expand", source + "_attention/_se_expand/")
            if settings.positional_encoding:
                name = source + "_attention/_pos_encoding/_rezero/scale"
                mapping.put(f"{block}/se/position_scale", [name], [mapping.tensor(name)])
            mapping.conv(f"{block}/projection", source + "_projection/", False, False)
            if source + "_skip/_projection/_batch_norm/gamma" in mapping.tensors:
                mapping.conv(f"{block}/skip", source + "_skip/_projection/", False, False)
            name = source + "_mobile_bottleneck/_rezero/scale"
            mapping.put(f"{block}/rezero", [name], [mapping.tensor(name)])
    head = f"{BACKBONE}layer_with_weights-{index + 1}/_project/"
    mapping.conv("head/project", head, False, False)


def _first_present(tensors: dict, prefix: str, suffixes) -> np.ndarray | None:
    for suffix in suffixes:
        if prefix + suffix in tensors:
            return np.asarray(tensors[prefix + suffix])
    return None


def _spec_from_tensors(tensors: dict, path) -> MovinetSpec:
    """The published size whose stem width and number of bottlenecks the file has."""
    layers = {
        int(match.group(1))
        for key in tensors
        if (match := re.match(re.escape(BACKBONE) + r"layer_with_weights-(\d+)/", key))
    }
    stem = _first_present(
        tensors, BACKBONE + "layer_with_weights-0/_stem/_conv/", ("kernel", "_conv/kernel")
    )
    blocks = len(layers) - 2
    for spec in MOVINET_SPECS.values():
        if (
            len(spec.layer_names()) == blocks
            and stem is not None
            and stem.shape[-1] == spec.stem_filters
        ):
            return spec
    raise WeightsError(
        f"{path}: {blocks} bottlenecks after a stem of {None if stem is None else stem.shape[-1]} "
        f"filters is no published MoViNet size ({', '.join(MOVINET_SPECS)})"
    )


def _keras_target(model, path: str):
    """The layer (or the variable) a Keras path names."""
    parts = path.split("/")
    found = model.get_layer(parts[0])
    for part in parts[1:]:
        found = getattr(found, part)
    return found


SOURCE_LICENSE = "Apache-2.0"
"""The license of the Model Garden's MoViNet code, checkpoints and TF Hub models
(tensorflow/models LICENSE; official/projects/movinet/README.md)."""


def converted_classifier(
    path: Path | str,
    settings: MovinetSettings | None = None,
    num_frames: int | None = None,
    image_size: tuple[int, int] | None = None,
):
    """(the Keras classifier of the MoViNet file at `path`, its SourceWeights): a Model
    Garden checkpoint or a TF Hub SavedModel read as data (checkpoint_files), every tensor
    mapped by name; clips [B, num_frames, H, W, 3] in [0, 1] (defaults: the size's
    published input). A file of the backbone alone has a classifier of one class, its
    weights untouched (`weights.num_classes` is 0)."""
    # Keras: lazily, this module's mapping is read without it
    from actrec.backbones.movinet.build import movinet_classifier
    from actrec.backbones.movinet.checkpoint_files import read_movinet_variables

    weights = source_weights(read_movinet_variables(path), path, settings)
    network = movinet_classifier(
        weights.spec, max(weights.num_classes, 1), weights.settings,
        num_frames=num_frames, image_size=image_size,
    )  # fmt: skip
    assign_weights(network, weights)
    return network, weights
