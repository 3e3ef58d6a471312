"""The MoViNet sizes and settings: what a network's shape depends on, importable without
TensorFlow.

The block tables are the Model Garden's BLOCK_SPECS (official/projects/movinet/modeling/
movinet.py, tf-models-official 2.20.0): a stem, five stages of bottlenecks (base filters,
and per layer its expansion filters, depthwise kernel and strides), a head projection and
the classifier's hidden width. Kernels and strides are (time, height, width).
"""

from __future__ import annotations

from dataclasses import dataclass

from actrec.backbones.spec import BackboneFamily

K13, K15, K33, K53 = (1, 3, 3), (1, 5, 5), (3, 3, 3), (5, 3, 3)
S11, S12 = (1, 1, 1), (1, 2, 2)


@dataclass(frozen=True)
class MovinetStage:
    """One stage: every layer projects to `base_filters`; layer i expands to
    expand_filters[i] with a depthwise kernel kernel_sizes[i] and strides strides[i]."""

    base_filters: int
    expand_filters: tuple[int, ...]
    kernel_sizes: tuple[tuple[int, int, int], ...]
    strides: tuple[tuple[int, int, int], ...]

    def __post_init__(self):
        if not len(self.expand_filters) == len(self.kernel_sizes) == len(self.strides):
            raise ValueError("a MoViNet stage needs one kernel and one stride per layer")


@dataclass(frozen=True)
class MovinetSpec:
    """One MoViNet size (A0 ... A5).

    stem_filters: the stem's 1x3x3 convolution (stride 1x2x2); stages: the bottlenecks;
    project_filters: the head's pointwise projection (the pooled feature width);
    head_filters: the classifier's hidden layer; frames / image_size / fps: the
    published Kinetics-600 input (50 frames of 172 px at 5 fps for A0).
    """

    name: str
    stem_filters: int
    stages: tuple[MovinetStage, ...]
    project_filters: int
    head_filters: int
    frames: int
    image_size: int
    fps: int

    @property
    def feature_width(self) -> int:
        return self.project_filters

    def layer_names(self) -> list[str]:
        """The bottlenecks' names in order: block{stage}_layer{index} (the Model Garden's)."""
        return [
            f"block{stage}_layer{index}"
            for stage, spec in enumerate(self.stages)
            for index in range(len(spec.expand_filters))
        ]


@dataclass(frozen=True)
class MovinetSettings:
    """How a MoViNet computes (the Model Garden's Movinet arguments).

    causal: causal temporal convolutions and cumulative squeeze-excitation pooling, so the
        network streams frame by frame; conv_type: "3d" (depthwise 3D kernels) or "2plus1d"
        (a spatial 2D kernel, then a temporal one, each with its BatchNorm and activation);
    se_type: "3d" (spatio-temporal pooling) or "2plus3d" (that and each frame's spatial
        pooling, concatenated); activation / gating_activation: the convolutions' and the
        squeeze-excitation gate's; classifier_activation: the classifier's hidden layer's
        (swish in every published model); positional_encoding: a sinusoid of the frame
        index added to the squeeze-excitation input (causal A3-A5 streams).
    """

    causal: bool = False
    conv_type: str = "3d"
    se_type: str = "3d"
    activation: str = "swish"
    gating_activation: str = "sigmoid"
    classifier_activation: str = "swish"
    positional_encoding: bool = False

    def __post_init__(self):
        for value, allowed, what in (
            (self.conv_type, CONV_TYPES, "conv_type"),
            (self.se_type, SE_TYPES, "se_type"),
            (self.activation, ACTIVATIONS, "activation"),
            (self.gating_activation, ACTIVATIONS, "gating_activation"),
            (self.classifier_activation, ACTIVATIONS, "classifier_activation"),
        ):
            if value not in allowed:
                raise ValueError(f"MoViNet {what} {value!r}: choose one of {', '.join(allowed)}")
        if self.positional_encoding and not self.causal:
            raise ValueError("MoViNet's positional encoding exists in causal mode only")


CONV_TYPES = ("3d", "2plus1d")
SE_TYPES = ("3d", "2plus3d")
ACTIVATIONS = ("swish", "hard_swish", "sigmoid", "hard_sigmoid", "relu")

BASE = MovinetSettings()
"""The published base models: non-causal 3D convolutions, 3D squeeze-excitation, swish."""


def stream_settings(spec_name: str) -> MovinetSettings:
    """The published stream models' settings (the Model Garden's README and TF Lite export):
    causal (2+1)D convolutions, 2plus3d squeeze-excitation, hard swish and hard sigmoid, the
    classifier's swish; A3-A5 add the positional encoding."""
    return MovinetSettings(
        causal=True,
        conv_type="2plus1d",
        se_type="2plus3d",
        activation="hard_swish",
        gating_activation="hard_sigmoid",
        positional_encoding=spec_name in ("movinet_a3", "movinet_a4", "movinet_a5"),
    )


def _stage(base, expand, kernels, strides) -> MovinetStage:
    return MovinetStage(base, tuple(expand), tuple(kernels), tuple(strides))


def _rest(count: int) -> list:
    return [S11] * count


MOVINET_SPECS = {
    spec.name: spec
    for spec in (
        MovinetSpec(
            "movinet_a0", 8,
            (
                _stage(8, [24], [K15], [S12]),
                _stage(32, [80, 80, 80], [K33] * 3, [S12, *_rest(2)]),
                _stage(56, [184, 112, 184], [K53, K33, K33], [S12, *_rest(2)]),
                _stage(56, [184] * 4, [K53, K33, K33, K33], _rest(4)),
                _stage(104, [384, 280, 280, 344], [K53, K15, K15, K15], [S12, *_rest(3)]),
            ),
            480, 2048, frames=50, image_size=172, fps=5,
        ),
        MovinetSpec(
            "movinet_a1", 16,
            (
                _stage(16, [40, 40], [K15, K33], [S12, S11]),
                _stage(40, [96, 120, 96, 96], [K33] * 4, [S12, *_rest(3)]),
                _stage(64, [216, 128, 216, 168, 216], [K53, *[K33] * 4], [S12, *_rest(4)]),
                _stage(64, [216, 216, 216, 128, 128, 216], [K53, K33, K33, K33, K15, K33],
                       _rest(6)),
                _stage(136, [456, 360, 360, 360, 456, 456, 544],
                       [K53, K15, K15, K15, K15, K33, K13], [S12, *_rest(6)]),
            ),
            600, 2048, frames=50, image_size=172, fps=5,
        ),
        MovinetSpec(
            "movinet_a2", 16,
            (
                _stage(16, [40, 40, 64], [K15, K33, K33], [S12, S11, S11]),
                _stage(40, [96, 120, 96, 96, 120], [K33] * 5, [S12, *_rest(4)]),
                _stage(72, [240, 160, 240, 192, 240], [K53, *[K33] * 4], [S12, *_rest(4)]),
                _stage(72, [240, 240, 240, 240, 144, 240], [K53, K33, K33, K33, K15, K33],
                       _rest(6)),
                _stage(144, [480, 384, 384, 480, 480, 480, 576],
                       [K53, K15, K15, K15, K15, K33, K13], [S12, *_rest(6)]),
            ),
            640, 2048, frames=50, image_size=224, fps=5,
        ),
        MovinetSpec(
            "movinet_a3", 16,
            (
                _stage(16, [40, 40, 64, 40], [K15, K33, K33, K33], [S12, *_rest(3)]),
                _stage(48, [112, 144, 112, 112, 144, 144], [K33, K33, K33, K15, K33, K33],
                       [S12, *_rest(5)]),
                _stage(80, [240, 152, 240, 192, 240], [K53, *[K33] * 4], [S12, *_rest(4)]),
                _stage(88, [264, 264, 264, 264, 160, 264, 264, 264],
                       [K53, K33, K33, K33, K15, K33, K33, K33], _rest(8)),
                _stage(168, [560, 448, 448, 560, 560, 560, 448, 448, 560, 672],
                       [K53, K15, K15, K15, K15, K33, K15, K15, K33, K13], [S12, *_rest(9)]),
            ),
            744, 2048, frames=120, image_size=256, fps=12,
        ),
        MovinetSpec(
            "movinet_a4", 24,
            (
                _stage(24, [64, 64, 96, 64, 96, 64], [K15, *[K33] * 5], [S12, *_rest(5)]),
                _stage(56, [168, 168, 136, 136, 168, 168, 168, 136, 136],
                       [*[K33] * 7, K15, K33], [S12, *_rest(8)]),
                _stage(96, [320, 160, 320, 192, 320, 160, 320, 256, 320], [K53, *[K33] * 8],
                       [S12, *_rest(8)]),
                _stage(96, [320, 320, 320, 320, 192, 320, 320, 192, 320, 320],
                       [K53, K33, K33, K33, K15, *[K33] * 5], _rest(10)),
                _stage(192, [640, 512, 512, 640, 640, 640, 512, 512, 640, 768, 640, 640, 768],
                       [K53, K15, K15, K15, K15, K33, K15, K15, K15, K15, K15, K33, K33],
                       [S12, *_rest(12)]),
            ),
            856, 2048, frames=80, image_size=290, fps=8,
        ),
        MovinetSpec(
            "movinet_a5", 24,
            (
                _stage(24, [64, 64, 96, 64, 96, 64], [K15, K15, *[K33] * 4], [S12, *_rest(5)]),
                _stage(64, [192, 152, 152, 152, 192, 192, 192, 152, 152, 192, 192],
                       [K53, *[K33] * 10], [S12, *_rest(10)]),
                _stage(112, [376, 224, 376, 376, 296, 376, 224, 376, 376, 296, 376, 376, 376],
                       [K53, *[K33] * 12], [S12, *_rest(12)]),
                _stage(120, [376, 376, 376, 376, 224, 376, 376, 224, 376, 376, 376],
                       [K53, K33, K33, K33, K15, *[K33] * 6], _rest(11)),
                _stage(224, [744, 744, 600, 600, 744, 744, 744, 896, 600, 600, 896, 744, 744,
                             896, 600, 600, 744, 744],
                       [K53, K33, K15, K15, K15, K15, K33, K15, K15, K15, K15, K15, K33, K15,
                        K15, K15, K15, K33],
                       [S12, *_rest(17)]),
            ),
            992, 2048, frames=120, image_size=320, fps=12,
        ),
    )
}  # fmt: skip
"""The published sizes by name (the Model Garden's a0 ... a5)."""


TEST_SPEC = MovinetSpec(
    "test_movinet", 8,
    (_stage(8, [16], [K33], [S12]), _stage(16, [24, 24], [K53, K33], [S12, S11])),
    32, 32, frames=4, image_size=32, fps=5,
)  # fmt: skip
"""A MoViNet of three bottlenecks (one 5-frame kernel, a strided skip, a kept one) and no
published weights: the suite's, as timm's test_* networks."""


@dataclass(frozen=True)
class MovinetNetwork:
    """One MoViNet a recipe names (a ClipNetworkSpec of actrec.backbones.spec): its size and
    settings, "movinet_a0" the base model, "movinet_a0_stream" the causal stream one.
    Its input is [0, 255] (preprocessing "none"): the network scales it to the Model
    Garden's [0, 1] itself."""

    name: str
    size: MovinetSpec
    settings: MovinetSettings
    preprocessing: str = "none"

    @property
    def default_input_size(self) -> int:
        return self.size.image_size

    @property
    def default_num_frames(self) -> int:
        return self.size.frames

    @property
    def feature_width(self) -> int:
        return self.size.project_filters

    @property
    def streams(self) -> bool:
        """Whether the network runs frame by frame (causal: the `_stream` sizes)."""
        return self.settings.causal

    def input_problem(self, num_frames: int, height: int, width: int) -> str | None:
        """Any clip of a frame or more and 8 pixels or more fits (SAME padding)."""
        if num_frames < 1 or min(height, width) < 8:
            return f"{self.name} takes clips of 1 frame or more and 8 pixels or more"
        return None


def _networks(spec: MovinetSpec) -> tuple[MovinetNetwork, MovinetNetwork]:
    return (
        MovinetNetwork(spec.name, spec, BASE),
        MovinetNetwork(f"{spec.name}_stream", spec, stream_settings(spec.name)),
    )


MOVINET_NETWORKS = {
    network.name: network
    for spec in (*MOVINET_SPECS.values(), TEST_SPEC)
    for network in _networks(spec)
}
"""Every size, base and stream: movinet_a0, movinet_a0_stream, ..., test_movinet(_stream)."""


FAMILY = BackboneFamily(
    name="movinet",
    position=9,
    specs=(),
    clip_networks=tuple(MOVINET_NETWORKS.values()),
    clip_architecture="movinet",
    clip_builder="recipe_network",
    keras_layers=("layers", "blocks"),
    clip_stream="stream",
)
"""The registry's entry: clip networks only (a video in, logits out; built by
actrec.backbones.movinet.build.recipe_network): a recipe names model.architecture=movinet
and a size as model.backbone (`_stream`: the causal stream settings)."""
