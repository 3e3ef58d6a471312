"""The backbone registry: names, published weight files and digests, preprocessing, widths."""

from __future__ import annotations

import importlib

import keras
import numpy as np
import pytest

from actrec.backbones.build import build_backbone, build_plain_backbone
from actrec.backbones.registry import (
    BACKBONES,
    backbone_names,
    backbone_spec,
    clip_family,
    clip_network_names,
)
from actrec.errors import ConfigError
from actrec.models.preprocessing import FramePreprocessing

# Tests run over the registry itself (timm style): a backbone added there is tested here.
REQUIRED = backbone_names()
KERAS_APPLICATIONS = [name for name in REQUIRED if backbone_spec(name).layout == "keras"]

# Which keras/src/applications module publishes each backbone's file.
KERAS_MODULE = {
    "resnet": "resnet",
    "inception": "inception_v3",
    "mobilenet_v2": "mobilenet_v2",
    "mobilenet_v3": "mobilenet_v3",
    "efficientnet_b": "efficientnet",
    "efficientnetv2": "efficientnet_v2",
    "densenet": "densenet",
}


def keras_module_of(name: str):
    prefix = next(prefix for prefix in KERAS_MODULE if name.startswith(prefix))
    return importlib.import_module(f"keras.src.applications.{KERAS_MODULE[prefix]}")


def test_registry_covers_every_keras_family_and_the_builtin_recipes():
    from actrec.config.files import load_recipe
    from actrec.config.inheritance import builtin_recipe_names

    for prefix in KERAS_MODULE:
        assert any(name.startswith(prefix) for name in REQUIRED), prefix
    # A frame backbone's name is the registry's; a clip network's, its architecture's family's.
    for recipe in map(load_recipe, builtin_recipe_names()):
        names = REQUIRED if clip_family(recipe.model.architecture) is None else (
            clip_network_names(recipe.model.architecture))  # fmt: skip
        assert recipe.model.backbone in names, recipe.model
    assert len(REQUIRED) == len(set(REQUIRED)) >= 17


def test_unknown_backbone_is_an_error_listing_the_valid_names():
    with pytest.raises(ConfigError) as caught:
        backbone_spec("resnet51")
    message = str(caught.value)
    assert "resnet51" in message
    for name in REQUIRED:
        assert name in message


class RequestedError(Exception):
    """Raised by the patched get_file once Keras has said which file it would download."""


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:`input_shape` is undefined")
@pytest.mark.parametrize("name", KERAS_APPLICATIONS)
def test_weight_file_name_url_and_digest_are_the_ones_keras_requests(name, monkeypatch):
    spec = backbone_spec(name)
    module = keras_module_of(name)
    requested = {}

    def get_file(fname=None, origin=None, file_hash=None, **keyword_arguments):
        requested.update(fname=fname, origin=origin, file_hash=file_hash)
        raise RequestedError

    monkeypatch.setattr(module.file_utils, "get_file", get_file)
    size = 75 if name == "inception_v3" else 32
    with pytest.raises(RequestedError):
        getattr(keras.applications, spec.constructor)(
            include_top=False,
            weights="imagenet",
            input_shape=(size, size, 3),
            **spec.constructor_arguments,
        )
    weights = spec.weights
    assert requested["fname"] == weights.file_name
    assert requested["origin"] == weights.url
    assert requested["file_hash"] == weights.file_hash
    if weights.hash_algorithm is not None:
        assert weights.hash_algorithm == "md5"
        # keras.utils.get_file treats a digest that is not 64 digits long as MD5.
        assert len(weights.file_hash) == 32


def test_resnet_and_efficientnet_digests_are_the_no_top_entries():
    resnet = importlib.import_module("keras.src.applications.resnet")
    efficientnet = importlib.import_module("keras.src.applications.efficientnet")
    efficientnet_v2 = importlib.import_module("keras.src.applications.efficientnet_v2")
    mobilenet_v3 = importlib.import_module("keras.src.applications.mobilenet_v3")
    assert backbone_spec("resnet101").weights.file_hash == resnet.WEIGHTS_HASHES["resnet101"][1]
    assert (
        backbone_spec("efficientnet_b2").weights.file_hash == (efficientnet.WEIGHTS_HASHES["b2"][1])
    )
    assert (
        backbone_spec("efficientnetv2_s").weights.file_hash
        == (efficientnet_v2.WEIGHTS_HASHES["-s"][1])
    )
    assert (
        backbone_spec("mobilenet_v3_small").weights.file_hash
        == (mobilenet_v3.WEIGHTS_HASHES["small_224_1.0_float"][1])
    )


# keras.applications' own preprocess_input for each preprocessing family.
PREPROCESS_INPUT = {
    "resnet50": keras.applications.resnet.preprocess_input,
    "inception_v3": keras.applications.inception_v3.preprocess_input,
    "mobilenet_v2": keras.applications.mobilenet_v2.preprocess_input,
    "densenet121": keras.applications.densenet.preprocess_input,
    "mobilenet_v3_small": keras.applications.mobilenet_v3.preprocess_input,
    "efficientnet_b0": keras.applications.efficientnet.preprocess_input,
    "efficientnetv2_b0": keras.applications.efficientnet_v2.preprocess_input,
}


@pytest.mark.parametrize("name", sorted(PREPROCESS_INPUT))
def test_rgb_preprocessing_equals_keras_preprocess_input(name):
    frames = np.random.default_rng(0).uniform(0, 255, (2, 3, 8, 8, 3)).astype("float32")
    expected = PREPROCESS_INPUT[name](frames.copy())
    ours = keras.ops.convert_to_numpy(
        FramePreprocessing(backbone_spec(name).preprocessing, "rgb")(frames)
    )
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("mode", ["caffe", "tf", "torch"])
def test_flow_preprocessing_maps_no_motion_to_zero(mode):
    flow = np.full((1, 2, 4, 4, 10), 128.0, dtype="float32")
    flow[..., 0] = 255.0
    out = keras.ops.convert_to_numpy(FramePreprocessing(mode, "flow")(flow))
    np.testing.assert_allclose(out[..., 1:], 0.0, atol=1e-6)
    assert out[..., 0].min() > 0.9  # full motion is about +1 (tf, torch) or +127 (caffe)


@pytest.mark.slow
@pytest.mark.parametrize("name", REQUIRED)
def test_constructor_builds_a_no_top_network_of_the_registered_width(name):
    spec = backbone_spec(name)
    size = 75 if name == "inception_v3" else 32  # InceptionV3's smallest input
    model = build_plain_backbone(backbone_spec(name), (size, size, 3))
    assert model.output_shape == (None, spec.feature_width)
    assert not any(isinstance(layer, keras.layers.Dense) for layer in model.layers)


def test_flow_backbone_takes_stacked_channels():
    model = build_backbone(backbone_spec("mobilenet_v2"), (32, 32, 10))
    assert model.input_shape == (None, 32, 32, 10)
    assert model.output_shape == (None, BACKBONES["mobilenet_v2"].feature_width)


def test_efficientnet_gets_the_rescaling_keras_adds_for_imagenet_weights():
    model = build_backbone(backbone_spec("efficientnet_b0"), (32, 32, 3))
    names = [layer.name for layer in model.layers]
    rescaling = model.get_layer("imagenet_stddev_rescaling")
    assert names.index("imagenet_stddev_rescaling") == names.index("stem_conv_pad") - 1
    np.testing.assert_allclose(
        rescaling.scale, [1 / np.sqrt(0.229), 1 / np.sqrt(0.224), 1 / np.sqrt(0.225)]
    )
