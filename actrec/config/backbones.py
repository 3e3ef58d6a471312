"""The backbone registry over keras.applications: the only list of backbones.

Config choices (`model.backbone`, which backbones TSM can shift), the CLI, the tests and the
docs table all read this list; adding a backbone is one entry here (docs/extending.md).
actrec.models.backbones builds the networks.

Each entry records how to build the network without its classifier, the input size and
preprocessing it was trained with, the width of its pooled features and the no-top
ImageNet weight file Keras publishes for it (name, URL and the digest Keras checks). A test
network (`test_*`, as timm names its own) has no weight file: it exists so that tests and
smoke runs train the real pipeline in seconds (`weights` None).

The digests are copied from the installed Keras sources (keras/src/applications/*.py).
Keras publishes 32-hex-digit MD5 digests for these files (its `get_file` picks MD5 for any
hash that is not 64 digits long), not SHA-256, and none at all for MobileNetV2; the registry
records exactly that (`hash_algorithm` is "md5" or None). Every file still has a digest: one
with none published is marked `sha256_recorded_at_install`, its SHA-256 recorded by the
local store when it installs the file and checked on every use, and a store copy that no
installation recorded is refused (see actrec.models.pretrained).

Importing this module imports neither Keras nor anything of actrec but its errors.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from actrec.errors import ConfigError

KERAS_APPLICATIONS_URL = "https://storage.googleapis.com/tensorflow/keras-applications/"
EFFICIENTNET_URL = "https://storage.googleapis.com/keras-applications/"


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
PyTorch source's layout ("pytorch": actrec.models.torch_layout), whose published weight
files are PyTorch files converted on installation."""

SHIFT_FAMILIES = ("resnet", "mobilenet_v2")
"""Backbone families into which a TemporalShift can be inserted (TSM)."""


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

    constructor: the name of the function that builds it: in keras.applications, or in
        actrec.models.torch_layout for layout "pytorch" (actrec.models.backbones looks it
        up: the registry names networks, it does not build them).
    default_input_size: the side of the square images it was trained on, in pixels.
    preprocessing: one of PREPROCESSING_MODES.
    feature_width: channels of the globally pooled no-top features.
    weights: its ImageNet weight file; None for a test network, which has none.
    shift_family: "resnet" or "mobilenet_v2" when TSM can be built on it, else None.
    constructor_arguments: extra keyword arguments for the constructor.
    layout: one of LAYOUTS.
    """

    name: str
    constructor: str
    default_input_size: int
    preprocessing: str
    feature_width: int
    weights: WeightsFile | None
    shift_family: str | None = None
    constructor_arguments: dict[str, Any] = field(default_factory=dict)
    layout: str = "keras"


def _resnet(name: str, constructor: str, md5: str) -> BackboneSpec:
    file_name = f"{name}_weights_tf_dim_ordering_tf_kernels_notop.h5"
    return BackboneSpec(
        name=name,
        constructor=constructor,
        default_input_size=224,
        preprocessing="caffe",
        feature_width=2048,
        weights=WeightsFile(file_name, f"{KERAS_APPLICATIONS_URL}resnet/{file_name}", "md5", md5),
        shift_family="resnet",
    )


def _efficientnet(variant: str, input_size: int, width: int, md5: str) -> BackboneSpec:
    file_name = f"efficientnet{variant}_notop.h5"
    return BackboneSpec(
        name=f"efficientnet_{variant}",
        constructor=f"EfficientNet{variant.upper()}",
        default_input_size=input_size,
        preprocessing="none",
        feature_width=width,
        weights=WeightsFile(file_name, f"{EFFICIENTNET_URL}{file_name}", "md5", md5),
    )


def _efficientnet_v2(variant: str, input_size: int, width: int, md5: str) -> BackboneSpec:
    file_name = f"efficientnetv2-{variant}_notop.h5"
    return BackboneSpec(
        name=f"efficientnetv2_{variant}",
        constructor=f"EfficientNetV2{variant.upper()}",
        default_input_size=input_size,
        preprocessing="none",
        feature_width=width,
        weights=WeightsFile(
            file_name, f"{KERAS_APPLICATIONS_URL}efficientnet_v2/{file_name}", "md5", md5
        ),
        constructor_arguments={"include_preprocessing": True},
    )


def _mobilenet_v3(size: str, width: int, md5: str) -> BackboneSpec:
    file_name = f"weights_mobilenet_v3_{size}_224_1.0_float_no_top_v2.h5"
    return BackboneSpec(
        name=f"mobilenet_v3_{size}",
        constructor=f"MobileNetV3{size.capitalize()}",
        default_input_size=224,
        preprocessing="none",
        feature_width=width,
        weights=WeightsFile(
            file_name, f"{KERAS_APPLICATIONS_URL}mobilenet_v3/{file_name}", "md5", md5
        ),
        constructor_arguments={"include_preprocessing": True},
    )


def _pytorch(name: str, width: int, shift_family: str, url: str) -> BackboneSpec:
    """A backbone with a PyTorch source's layout; its ImageNet file is `url` (a bare name is
    one of torchvision's), whose name ends in the first hex digits of its SHA-256 (torch.hub's
    convention: "resnet50-0676ba61.pth"); the store keeps its conversion to Keras weights."""
    if "/" not in url:
        url = f"{TORCHVISION_URL}{url}"
    source_file_name = url.rsplit("/", 1)[-1].split("?")[0]
    hash_prefix = re.search(r"-([a-f0-9]+)\.", source_file_name).group(1)
    return BackboneSpec(
        name=name,
        constructor=name,
        default_input_size=224,
        preprocessing="tsm",
        feature_width=width,
        weights=WeightsFile(
            f"{name}_notop.weights.h5",
            url,
            "sha256-prefix",
            hash_prefix,
            source_file_name=source_file_name,
        ),
        shift_family=shift_family,
        layout="pytorch",
    )


TORCHVISION_URL = "https://download.pytorch.org/models/"
TSM_MOBILENET_V2_URL = (
    "https://www.dropbox.com/s/47tyzpofuuyyv1b/mobilenetv2_1.0-f2a8633.pth.tar?dl=1"
)
"""archs/mobilenet_v2.py's ImageNet file (mit-han-lab/temporal-shift-module)."""

_INCEPTION_V3_FILE = "inception_v3_weights_tf_dim_ordering_tf_kernels_notop.h5"
_MOBILENET_V2_FILE = "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_1.0_224_no_top.h5"
_DENSENET121_FILE = "densenet121_weights_tf_dim_ordering_tf_kernels_notop.h5"

_SPECS = [
    _resnet("resnet50", "ResNet50", "4d473c1dd8becc155b73f8504c6f6626"),
    _resnet("resnet101", "ResNet101", "88cf7a10940856eca736dc7b7e228a21"),
    _resnet("resnet152", "ResNet152", "ee4c566cf9a93f14d82f913c2dc6dd0c"),
    BackboneSpec(
        name="inception_v3",
        constructor="InceptionV3",
        default_input_size=299,
        preprocessing="tf",
        feature_width=2048,
        weights=WeightsFile(
            _INCEPTION_V3_FILE,
            f"{KERAS_APPLICATIONS_URL}inception_v3/{_INCEPTION_V3_FILE}",
            "md5",
            "bcbd6486424b2319ff4ef7d526e38f63",
        ),
    ),
    BackboneSpec(
        name="mobilenet_v2",
        constructor="MobileNetV2",
        default_input_size=224,
        preprocessing="tf",
        feature_width=1280,
        # keras.applications.mobilenet_v2 publishes no digest (Keras downloads it unchecked),
        # and none is published elsewhere that actrec can cite: its digest is the SHA-256
        # the store records when it installs the file (`--sha256 HEX` checks a mirror's).
        weights=WeightsFile(
            _MOBILENET_V2_FILE,
            f"{KERAS_APPLICATIONS_URL}mobilenet_v2/{_MOBILENET_V2_FILE}",
            None,
            None,
            sha256_recorded_at_install=True,
        ),
        shift_family="mobilenet_v2",
    ),
    _mobilenet_v3("small", 576, "d3e8ec802a04aa4fc771ee12a9a9b836"),
    _mobilenet_v3("large", 960, "07fb09a5933dd0c8eaafa16978110389"),
    _efficientnet("b0", 224, 1280, "50bc09e76180e00e4465e1a485ddc09d"),
    _efficientnet("b1", 240, 1280, "74c4e6b3e1f6a1eea24c589628592432"),
    _efficientnet("b2", 260, 1408, "111f8e2ac8aa800a7a99e3239f7bfb39"),
    _efficientnet("b3", 300, 1536, "af6d107764bb5b1abb91932881670226"),
    _efficientnet_v2("b0", 224, 1280, "893217f2bb855e2983157299931e43ff"),
    _efficientnet_v2("b1", 240, 1280, "0e80663031ca32d657f9caa404b6ec37"),
    _efficientnet_v2("b2", 260, 1408, "1dfe2e7a5d45b6632553a8961ea609eb"),
    _efficientnet_v2("b3", 300, 1536, "f6abf7b5849ac99a89b50dd3fd532856"),
    _efficientnet_v2("s", 384, 1280, "af0682fb74e8c54910f2d4393339c070"),
    BackboneSpec(
        name="densenet121",
        constructor="DenseNet121",
        default_input_size=224,
        preprocessing="torch",
        feature_width=1024,
        weights=WeightsFile(
            _DENSENET121_FILE,
            f"{KERAS_APPLICATIONS_URL}densenet/{_DENSENET121_FILE}",
            "md5",
            "30ee3e1110167f948a6b9946edeeb738",
        ),
    ),
    # torchvision's ImageNet V1 weights, which TSM's and mmaction2's published models
    # started from (76.1 % ImageNet top-1; keras.applications' ResNet-50: 74.9 %).
    # (torchvision/models/resnet.py, ResNet50_Weights.IMAGENET1K_V1 / ResNet101's).
    _pytorch("resnet50_torchvision", 2048, "resnet", "resnet50-0676ba61.pth"),
    _pytorch("resnet101_torchvision", 2048, "resnet", "resnet101-63fe2227.pth"),
    _pytorch("mobilenet_v2_tsm", 1280, "mobilenet_v2", TSM_MOBILENET_V2_URL),
    # A few MobileNetV2 blocks with TSM's layout and keras.applications' layer names: TSM
    # shifts it and the streaming export cuts it as it does MobileNetV2, and a one-step
    # training takes 3.7x less time (benchmarks/tiny_backbone.py). It has no weights.
    BackboneSpec(
        name="test_mobilenet_v2",
        constructor="test_mobilenet_v2",
        default_input_size=32,
        preprocessing="tsm",
        feature_width=64,
        weights=None,
        shift_family="mobilenet_v2",
        layout="pytorch",
    ),
]

BACKBONES: dict[str, BackboneSpec] = {spec.name: spec for spec in _SPECS}


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
