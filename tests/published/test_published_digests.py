"""Every ImageNet file actrec knows has a digest: Keras's published MD5, the SHA-256 prefix
a PyTorch file's name carries, or (where none is published: Keras's MobileNetV2) the SHA-256
the store records when it installs the file, checked on every use; a store copy no
installation recorded is not used."""

from __future__ import annotations

import re

import pytest

from actrec.backbones import pretrained, weight_install
from actrec.backbones.registry import BACKBONES, backbone_spec
from actrec.errors import WeightsError

HEX = re.compile(r"[0-9a-f]+")


@pytest.mark.parametrize("name", [name for name, spec in BACKBONES.items() if spec.weights])
def test_every_imagenet_file_in_the_registry_has_a_digest(name):
    weights = BACKBONES[name].weights
    if weights.hash_algorithm == "md5":
        assert HEX.fullmatch(weights.file_hash) and len(weights.file_hash) == 32
    elif weights.hash_algorithm == "sha256-prefix":
        assert HEX.fullmatch(weights.file_hash) and len(weights.file_hash) in (7, 8)
        assert f"-{weights.file_hash}." in weights.source_file_name
    else:  # none published: the SHA-256 recorded at installation is its digest
        assert (weights.hash_algorithm, weights.file_hash) == (None, None)
        assert weights.sha256_recorded_at_install
    assert not (weights.hash_algorithm and weights.sha256_recorded_at_install)


@pytest.fixture
def empty_store(tmp_path, monkeypatch):
    store = tmp_path / "store"
    monkeypatch.setenv("ACTREC_PRETRAINED", str(store))
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras"))
    monkeypatch.setenv("ACTREC_OFFLINE", "1")
    return store


def test_a_file_without_a_published_digest_is_used_only_as_installed(empty_store, tmp_path):
    weights = backbone_spec("mobilenet_v2").weights
    assert weights.sha256_recorded_at_install
    download = tmp_path / weights.file_name
    download.write_bytes(b"MobileNetV2 weights, as downloaded")
    empty_store.mkdir()
    by_hand = empty_store / weights.file_name
    by_hand.write_bytes(download.read_bytes())
    with pytest.raises(WeightsError) as caught:
        pretrained.resolve_weights(backbone_spec("mobilenet_v2"))
    message = " ".join(str(caught.value).split())
    assert "records no SHA-256" in message and "actrec pretrained import" in message
    by_hand.unlink()
    installed = weight_install.import_weights(download, convert=None)
    assert pretrained.resolve_weights(backbone_spec("mobilenet_v2")) == installed
    status = pretrained.weights_status(backbone_spec("mobilenet_v2"))
    assert pretrained.check_found_file(status) == "the SHA-256 recorded at installation"
    installed.write_bytes(b"MobileNetV2 weights, altered")
    with pytest.raises(WeightsError, match="changed since"):
        pretrained.resolve_weights(backbone_spec("mobilenet_v2"))
