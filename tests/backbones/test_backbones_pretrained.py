"""ImageNet weight files: loading the published format, cross-modality init, the store."""

from __future__ import annotations

import dataclasses
import hashlib
import re

import h5py
import keras
import numpy as np
import pytest
from keras.src.legacy.saving import legacy_h5_format

from actrec.backbones import pretrained, weight_digests, weight_install, weight_store
from actrec.backbones.build import build_backbone, build_plain_backbone
from actrec.backbones.registry import backbone_spec
from actrec.errors import WeightsError
from actrec.models.initialisation import load_imagenet_weights
from actrec.models.segment_model import build_segment_model, segment_backbone

SIZE = 32


def write_published_file(model: keras.Model, path) -> None:
    """Writes `model`'s weights as Keras publishes its no-top files (legacy HDF5)."""
    with h5py.File(path, "w") as stream:
        legacy_h5_format.save_weights_to_hdf5_group(stream, model)


def randomised_reference(name: str, seed: int = 0) -> keras.Model:
    """A keras.applications no-top network whose every weight differs from a fresh one."""
    model = build_plain_backbone(backbone_spec(name), (SIZE, SIZE, 3))
    rng = np.random.default_rng(seed)
    values = []
    for weight in model.weights:
        value = keras.ops.convert_to_numpy(weight)
        if weight.path.endswith(("moving_variance", "normalization/variance")):
            value = rng.uniform(0.5, 1.5, value.shape)
        elif weight.path.endswith("count"):
            pass
        else:
            value = value + rng.normal(0, 0.05, value.shape)
        values.append(np.asarray(value, dtype=keras.ops.convert_to_numpy(weight).dtype))
    model.set_weights(values)
    return model


def weights_by_path(model: keras.Model) -> dict[str, np.ndarray]:
    return {weight.path: keras.ops.convert_to_numpy(weight) for weight in model.weights}


@pytest.fixture
def isolated_store(tmp_path, monkeypatch):
    """An empty store and an empty Keras cache; downloads are forbidden."""
    store = tmp_path / "store"
    monkeypatch.setenv("ACTREC_PRETRAINED", str(store))
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras_home"))
    monkeypatch.setenv("ACTREC_OFFLINE", "1")
    return store


@pytest.fixture(scope="module")
def resnet50_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("weights") / "resnet50_notop_random.h5"
    reference = randomised_reference("resnet50")
    write_published_file(reference, path)
    return path, weights_by_path(reference)


@pytest.fixture(scope="module")
def mobilenet_v2_file(tmp_path_factory):
    name = backbone_spec("mobilenet_v2").weights.file_name
    path = tmp_path_factory.mktemp("downloads") / name
    reference = randomised_reference("mobilenet_v2", seed=1)
    write_published_file(reference, path)
    return path, weights_by_path(reference)


def test_published_resnet50_file_loads_into_tsn_and_tsm(resnet50_file):
    path, expected = resnet50_file
    for architecture in ("tsn", "tsm"):
        model = build_segment_model(
            "resnet50",
            7,
            architecture=architecture,
            num_segments=2,
            input_size=SIZE,
            weights=path,
        )
        loaded = weights_by_path(segment_backbone(model))
        assert loaded.keys() == expected.keys()
        for name, value in expected.items():
            np.testing.assert_array_equal(loaded[name], value, err_msg=name)


def test_cross_modality_init_averages_conv1_and_copies_the_rest(resnet50_file):
    path, expected = resnet50_file
    flow = build_segment_model(
        "resnet50",
        7,
        modality="flow",
        new_length=5,
        num_segments=2,
        input_size=SIZE,
        weights=path,
    )
    loaded = weights_by_path(segment_backbone(flow))
    rgb_kernel = expected["conv1_conv/kernel"]  # [7, 7, 3, 64]
    flow_kernel = loaded["conv1_conv/kernel"]  # [7, 7, 10, 64]
    assert flow_kernel.shape == (7, 7, 10, 64)
    mean_kernel = rgb_kernel.mean(axis=2)  # [7, 7, 64]
    for channel in range(10):
        np.testing.assert_allclose(flow_kernel[:, :, channel, :], mean_kernel, rtol=1e-6)
    np.testing.assert_allclose(flow_kernel.sum(axis=2), rgb_kernel.sum(axis=2) * 10 / 3, rtol=1e-4)
    for name, value in expected.items():
        if name != "conv1_conv/kernel":
            np.testing.assert_array_equal(loaded[name], value, err_msg=name)


def test_flow_efficientnet_averages_its_input_normalisation(tmp_path):
    path = tmp_path / "efficientnet.h5"
    reference = randomised_reference("efficientnet_b0", seed=4)
    write_published_file(reference, path)
    flow = build_segment_model(
        "efficientnet_b0",
        4,
        modality="flow",
        new_length=2,
        num_segments=2,
        input_size=SIZE,
        weights=path,
    )
    normalization = next(
        layer
        for layer in segment_backbone(flow).layers
        if isinstance(layer, keras.layers.Normalization)
    )
    rgb_normalization = next(
        layer for layer in reference.layers if isinstance(layer, keras.layers.Normalization)
    )
    rgb_mean = keras.ops.convert_to_numpy(rgb_normalization.adapt_mean)  # [3]
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(normalization.adapt_mean),
        np.full(4, rgb_mean.mean()),
        rtol=1e-6,
    )
    # The layer computes with the copied statistics, not the ones it was built with.
    frames = np.full((1, SIZE, SIZE, 4), 255.0, dtype="float32")
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(normalization(frames / 255.0))[0, 0, 0],
        (1.0 - rgb_mean.mean())
        / np.sqrt(keras.ops.convert_to_numpy(rgb_normalization.adapt_variance).mean()),
        rtol=1e-5,
    )


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:`input_shape` is undefined")
@pytest.mark.parametrize(
    ("name", "module"),
    [("resnet50", "resnet"), ("efficientnet_b0", "efficientnet"), ("mobilenet_v2", "mobilenet_v2")],
)
def test_backbone_computes_what_keras_computes_with_the_same_imagenet_file(
    name, module, tmp_path, monkeypatch
):
    path = tmp_path / backbone_spec(name).weights.file_name
    write_published_file(randomised_reference(name, seed=2), path)
    keras_module = __import__(f"keras.src.applications.{module}", fromlist=["file_utils"])
    monkeypatch.setattr(keras_module.file_utils, "get_file", lambda *args, **kwargs: str(path))
    spec = backbone_spec(name)
    keras_model = getattr(keras.applications, spec.constructor)(
        include_top=False,
        weights="imagenet",
        input_shape=(SIZE, SIZE, 3),
        pooling="avg",
        **spec.constructor_arguments,
    )
    ours = build_backbone(backbone_spec(name), (SIZE, SIZE, 3))
    load_imagenet_weights(ours, backbone_spec(name), path)
    frames = np.random.default_rng(3).uniform(0, 255, (2, SIZE, SIZE, 3)).astype("float32")
    expected = keras.ops.convert_to_numpy(keras_model(frames))
    np.testing.assert_allclose(keras.ops.convert_to_numpy(ours(frames)), expected, atol=1e-5)
    if name == "efficientnet_b0":
        # Without the rescaling Keras adds for ImageNet weights the first convolution
        # (and, on trained weights, everything after it) sees other values.
        plain = build_plain_backbone(backbone_spec(name), (SIZE, SIZE, 3))
        plain.load_weights(str(path))
        stem = {
            label: keras.ops.convert_to_numpy(
                keras.Model(model.input, model.get_layer("stem_conv").output)(frames)
            )
            for label, model in (("keras", keras_model), ("ours", ours), ("plain", plain))
        }
        np.testing.assert_allclose(stem["ours"], stem["keras"], atol=1e-4)
        assert np.abs(stem["plain"] - stem["keras"]).max() > 0.1


def test_missing_weights_error_names_the_file_url_and_import_command(isolated_store):
    with pytest.raises(WeightsError) as caught:
        pretrained.resolve_weights(backbone_spec("resnet50"))
    message = str(caught.value)
    weights = backbone_spec("resnet50").weights
    assert weights.file_name in message
    assert weights.url in message
    assert "actrec pretrained import" in message
    assert str(isolated_store) in message


def test_model_with_imagenet_weights_fails_offline_without_the_file(isolated_store):
    with pytest.raises(WeightsError, match="mobilenet_v2_weights_tf_dim_ordering"):
        build_segment_model("mobilenet_v2", 3, num_segments=2, input_size=SIZE)


def test_import_then_imagenet_weights_resolve_from_the_store(isolated_store, mobilenet_v2_file):
    path, expected = mobilenet_v2_file
    sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
    installed = weight_install.import_weights(path, expected_sha256=sha256, convert=None)
    assert installed == isolated_store / path.name
    assert installed.read_bytes() == path.read_bytes()
    record = weight_store.read_manifest(isolated_store)["files"][path.name]
    assert record["sha256"] == sha256
    assert record["backbone"] == "mobilenet_v2"
    model = build_segment_model("mobilenet_v2", 3, num_segments=2, input_size=SIZE)
    loaded = weights_by_path(segment_backbone(model))
    for name, value in expected.items():
        np.testing.assert_array_equal(loaded[name], value, err_msg=name)


def store_entries(store):
    return sorted(path.name for path in store.iterdir()) if store.exists() else []


def test_import_with_a_wrong_sha256_installs_nothing(isolated_store, mobilenet_v2_file):
    path, _ = mobilenet_v2_file
    with pytest.raises(WeightsError, match="SHA-256"):
        weight_install.import_weights(path, expected_sha256="0" * 64, convert=None)
    assert store_entries(isolated_store) == []


def test_file_that_fails_the_published_md5_installs_nothing(isolated_store, resnet50_file):
    path, _ = resnet50_file
    with pytest.raises(WeightsError) as caught:
        weight_install.import_weights(path, backbone_spec("resnet50"), convert=None)
    message = str(caught.value)
    assert backbone_spec("resnet50").weights.file_hash in message
    assert hashlib.md5(path.read_bytes()).hexdigest() in message
    assert store_entries(isolated_store) == []


def test_fetch_from_a_file_url_verifies_and_installs(
    isolated_store, mobilenet_v2_file, resnet50_file, monkeypatch
):
    monkeypatch.delenv("ACTREC_OFFLINE")
    path, _ = mobilenet_v2_file
    sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
    installed = weight_install.fetch_weights(
        backbone_spec("mobilenet_v2"), url=path.as_uri(), expected_sha256=sha256, convert=None
    )
    assert installed.read_bytes() == path.read_bytes()
    # A download that fails the published MD5 leaves no file behind, not even a partial one.
    bad, _ = resnet50_file
    with pytest.raises(WeightsError, match="MD5"):
        weight_install.fetch_weights(backbone_spec("resnet50"), url=bad.as_uri(), convert=None)
    assert store_entries(isolated_store) == ["manifest.json", path.name]


def test_fetch_offline_never_downloads(isolated_store, mobilenet_v2_file):
    path, _ = mobilenet_v2_file
    with pytest.raises(WeightsError) as caught:
        weight_install.fetch_weights(backbone_spec("mobilenet_v2"), url=path.as_uri(), convert=None)
    assert "ACTREC_OFFLINE" in str(caught.value)
    assert "actrec pretrained import" in str(caught.value)
    assert store_entries(isolated_store) == []


def test_a_pytorch_file_is_installed_only_with_its_conversion_handed_in(isolated_store):
    """models reads no PyTorch file: actrec.published.imagenet hands the conversion in."""
    with pytest.raises(WeightsError, match=r"resnet50-0676ba61\.pth is a PyTorch file"):
        weight_install.fetch_weights(backbone_spec("resnet50_torchvision"), convert=None)
    assert store_entries(isolated_store) == []


def test_store_comes_before_the_keras_cache_and_changed_files_are_refused(
    isolated_store, mobilenet_v2_file, tmp_path
):
    path, _ = mobilenet_v2_file
    cache = weight_store.keras_cache_directory()
    cache.mkdir(parents=True)
    (cache / path.name).write_bytes(b"another file")
    assert pretrained.resolve_weights(backbone_spec("mobilenet_v2")) == cache / path.name
    installed = weight_install.import_weights(path, convert=None)
    assert pretrained.resolve_weights(backbone_spec("mobilenet_v2")) == installed
    installed.write_bytes(path.read_bytes()[:-10] + b"0123456789")
    with pytest.raises(WeightsError, match="changed since"):
        pretrained.resolve_weights(backbone_spec("mobilenet_v2"))


def test_md5_published_by_keras_is_checked(tmp_path, monkeypatch):
    file = tmp_path / "weights.h5"
    file.write_bytes(b"weights")
    spec = backbone_spec("densenet121")
    matching = dataclasses.replace(
        spec,
        weights=dataclasses.replace(spec.weights, file_hash=hashlib.md5(b"weights").hexdigest()),
    )
    digests = weight_digests.verified_digests(file, matching)
    assert digests.sha256 == hashlib.sha256(b"weights").hexdigest()
    with pytest.raises(WeightsError, match=re.escape(spec.weights.file_hash)):
        weight_digests.verified_digests(file, spec)


def test_explicit_missing_path_is_an_error():
    with pytest.raises(WeightsError, match=r"does-not-exist\.h5"):
        pretrained.resolve_weights(backbone_spec("resnet50"), "/nowhere/does-not-exist.h5")


def test_a_test_network_has_no_imagenet_file_but_takes_an_explicit_one(tmp_path):
    from actrec.errors import ConfigError

    with pytest.raises(ConfigError, match=r"'test_mobilenet_v2' is a test network with no Im"):
        pretrained.resolve_weights(backbone_spec("test_mobilenet_v2"))
    own = tmp_path / "own.weights.h5"
    build_backbone(backbone_spec("test_mobilenet_v2"), (32, 32, 3)).save_weights(str(own))
    assert pretrained.resolve_weights(backbone_spec("test_mobilenet_v2"), own) == own
