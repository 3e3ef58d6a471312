"""What a backbone family declares: its registry entries (BackboneSpec, each with its
ImageNet weight file), where TSM shifts its blocks (ShiftBlocks) and how a published PyTorch
file's modules name its Keras layers (PublishedLayout), gathered in one BackboneFamily.

Each family folder's `spec.py` defines `FAMILY`; actrec.backbones.registry finds them. The
preprocessing modes every backbone chooses from are listed here too.

Importing this module imports neither Keras nor anything of actrec.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

KERAS_APPLICATIONS_URL = "https://storage.googleapis.com/tensorflow/keras-applications/"
TORCHVISION_URL = "https://download.pytorch.org/models/"


@dataclass(frozen=True)
class SourceNormalisation:
    """How a published source normalised its input: RGB as keras.applications' mode
    `rgb_as`, flow as (x - flow_mean) / flow_std (flow_std None: `rgb_as`'s flow scale)."""

    rgb_as: str
    flow_mean: float
    flow_std: float | None = None


SOURCE_NORMALISATIONS = {
    "tsm": SourceNormalisation("torch", 127.5),
    "mmaction2": SourceNormalisation("torch", 128.0, 128.0),
}
"""The published sources' preprocessing modes (actrec.published.sources: each source's
`preprocessing` names one)."""
PREPROCESSING_MODES = ("caffe", "tf", "torch", "none", *SOURCE_NORMALISATIONS)
"""How frames in [0, 255] RGB become backbone input (keras.applications' own modes, then
those of the published PyTorch video models):

- caffe: RGB -> BGR, minus the ImageNet BGR mean (ResNet v1);
- tf: scaled to [-1, 1] (InceptionV3, MobileNetV2);
- torch: scaled to [0, 1], minus the ImageNet mean, divided by its standard deviation
  (DenseNet);
- none: the network rescales inside itself and takes [0, 255] (MobileNetV3, EfficientNet,
  EfficientNetV2);
- tsm: RGB as torch; flow as TSM's code normalises it (x / 255 - 0.5, divided by the mean
  ImageNet standard deviation: mit-han-lab/temporal-shift-module ops/models.py);
- mmaction2: RGB as torch (mmaction2's mean 123.675, 116.28, 103.53 and std 58.395, 57.12,
  57.375 are torch's x 255); flow (x - 128) / 128 (its TSN flow configs).

Flow's normalisation differs between sources, so a converted model records the one it was
trained with (model.preprocessing).
"""

LAYOUTS = ("keras", "pytorch")
"""Whose network a backbone is: keras.applications' ("keras"), or one built in Keras with a
PyTorch source's layout ("pytorch": its family's build.py), whose published weight files are
PyTorch files converted on installation."""


@dataclass(frozen=True)
class WeightsFile:
    """A no-top ImageNet weight file as Keras publishes it, or a PyTorch ImageNet file.

    `hash_algorithm` is "md5" when Keras checks the file with an MD5 digest (`file_hash`),
    "sha256-prefix" when the file name carries the first hex digits of its SHA-256
    (`file_hash`; torch.hub's check of torchvision's files), or None when no digest is
    published (then nothing is verified against the publisher).
    `file_name` is the name in the store; `source_file_name` the published PyTorch file's
    name where the store holds its conversion (None: the store holds the published file).
    `sha256_recorded_at_install`: no digest is published, so the file's digest is the
    SHA-256 the store records when it installs it (`actrec pretrained import` / `fetch`),
    checked on every use; a copy in the store without that record is not used.
    """

    file_name: str
    url: str
    hash_algorithm: str | None
    file_hash: str | None
    source_file_name: str | None = None
    sha256_recorded_at_install: bool = False


@dataclass(frozen=True)
class BackboneSpec:
    """One registered backbone.

    family: the folder (actrec.backbones.<family>) that declares and builds it.
    constructor: the name of the function that builds it: in keras.applications for layout
        "keras", in its family's build.py for layout "pytorch".
    default_input_size: the side of the square images it was trained on, in pixels.
    preprocessing: one of PREPROCESSING_MODES.
    feature_width: channels of the globally pooled no-top features.
    weights: its ImageNet weight file; None for a test network, which has none.
    shift_family: the ShiftBlocks (`name`) TSM shifts it by, None when TSM cannot be built
        on it.
    constructor_arguments: extra keyword arguments for the constructor.
    layout: one of LAYOUTS.
    """

    name: str
    family: str
    constructor: str
    default_input_size: int
    preprocessing: str
    feature_width: int
    weights: WeightsFile | None
    shift_family: str | None = None
    constructor_arguments: dict[str, Any] = field(default_factory=dict)
    layout: str = "keras"


@dataclass(frozen=True)
class ShiftBlocks:
    """Where TSM shifts a family's network, by its Keras layer names.

    block: a layer's block ("conv3_block2_1_conv" -> "conv3_block2"), group 1;
    residual_add: the add that closes a residual block (group 1: the block);
    first_branch_convolution: the suffix of a residual branch's first convolution (what a
        "blockres" shift feeds);
    blockres_blocks: which of the residual blocks a "blockres" shift takes (None: all).
    """

    name: str
    block: re.Pattern
    residual_add: re.Pattern
    first_branch_convolution: str
    blockres_blocks: Callable[[set[str]], set[str]] | None = None


@dataclass(frozen=True)
class PublishedLayout:
    """A network family in a PyTorch source's spelling: `stem`, its first convolution (every
    state dict of the family has it; its input channels are the clip's), `block`, a whole
    block (what a "block" shift wraps), and `layer_name`, a module's Keras layer (None: the
    module has none). `name` is the family's name in the published sources' tables."""

    name: str
    stem: str
    block: re.Pattern
    layer_name: Callable[[str], str | None]


@dataclass(frozen=True)
class BackboneFamily:
    """One folder of actrec.backbones: its backbones and what TSM and conversion need.

    position: where its backbones come in listings (the CLI's choices, the docs table), the
        order the families were added in.
    shift: where TSM shifts the networks whose `shift_family` is its name (None: it names
        no ShiftBlocks of its own).
    published_layout: how a published PyTorch file of the family names its layers (None:
        no PyTorch file is converted into it).
    clip_networks: the sizes of a family of clip networks (a video in, logits out: VideoMAE),
        each a ClipNetworkSpec; such a family has no per-frame `specs`.
    clip_architecture: the `model.architecture` a recipe names to build one of
        `clip_networks` (its size is `model.backbone`); None for a per-frame family.
    clip_builder: the function of the family's build.py that builds a recipe's clip network
        (ClipNetworkSpec's contract: actrec.models.factory calls it).
    clip_converter: the module of the family's folder that reads a published file's tensors
        for a recipe (`recognises(state_dict)`, `recipe_conversion(state_dict, path, config,
        heads) -> ClipConversion`; `actrec pretrained convert` calls it), None: none.
    keras_layers: the folder's modules that register Keras classes, which a `.keras` file
        names (e.g. ("layers",)): the loader (actrec.models.keras_file) imports them through
        the registry.
    clip_stream: the module of the family's folder that runs a causal clip network frame
        by frame (`is_stream_network(model)`, `stream_state_shapes(model)`,
        `stream_step(model)`: actrec.models.streaming calls them), None: none streams.
    """

    name: str
    position: int
    specs: tuple[BackboneSpec, ...]
    shift: ShiftBlocks | None = None
    published_layout: PublishedLayout | None = None
    clip_networks: tuple = ()
    clip_architecture: str | None = None
    clip_builder: str = "recipe_network"
    clip_converter: str | None = None
    keras_layers: tuple[str, ...] = ()
    clip_stream: str | None = None

    def __post_init__(self):
        if self.clip_networks and not self.clip_architecture:
            raise ValueError(f"family {self.name}: its clip networks need a clip_architecture")


@dataclass(frozen=True)
class ClipConversion:
    """A published clip network's file as a recipe takes it: `backbone` (the registered
    size it is named by), `network` (model.network: the fields it differs in, FIELD=VALUE),
    `num_classes` (0: no classifier), `layout` (whose tensor names), the clip it was
    published for (`num_frames`, `input_size`), and `assign(model)`, which sets a network
    built from that recipe to the file's weights (WeightsError naming a tensor that does
    not fit)."""

    backbone: str
    network: tuple[str, ...]
    num_classes: int
    layout: str
    num_frames: int
    input_size: int
    assign: Callable[[Any], None]


class ClipNetworkSpec(Protocol):
    """What a clip network's size declares (a video in, logits out: VideoMAE, MoViNet), so
    that the recipe, its checks and the factory treat every clip family alike.

    name: the `model.backbone` value; default_input_size / default_num_frames: the clip it
    was trained on; preprocessing: one of PREPROCESSING_MODES (frames in [0, 255] -> its
    input); feature_width: the width D of its pooled clip features;
    input_problem(num_frames, height, width): why it cannot take such a clip (one sentence
    naming the fix), None when it can.

    The family's build.py `clip_builder` has the signature
        builder(spec, num_classes, *, num_frames, input_size, dropout, drop_path_rate,
                remat, preprocessing, seed, name) -> keras.Model
    frames [B, num_frames, input_size, input_size, 3] in [0, 255] (the Keras input named
    "frames") -> logits [B, num_classes] (float32); preprocessing: a Keras layer applied to
    the frames first (the recipe's normalisation), or None.
    """

    name: str
    default_input_size: int
    default_num_frames: int
    preprocessing: str
    feature_width: int

    def input_problem(self, num_frames: int, height: int, width: int) -> str | None: ...
