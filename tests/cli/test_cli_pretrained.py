"""`actrec pretrained list | fetch | import` through the real command group."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from actrec_cli.main import main
from click.testing import CliRunner

from actrec.backbones.registry import backbone_spec, weighted_backbone_names

MOBILENET_V2 = backbone_spec("mobilenet_v2").weights
RESNET50 = backbone_spec("resnet50").weights


def flat(text: str) -> str:
    """`text` without whitespace: rich wraps long lines (URLs included) at any width."""
    return re.sub(r"\s+", "", text)


@pytest.fixture
def environment(tmp_path):
    return {
        "ACTREC_PRETRAINED": str(tmp_path / "store"),
        "KERAS_HOME": str(tmp_path / "keras_home"),
        "ACTREC_OFFLINE": "1",
    }


@pytest.fixture(scope="module")
def mobilenet_v2_download(tmp_path_factory):
    """A real no-top weight file written by keras.applications, under Keras's file name."""
    import h5py
    from keras.src.legacy.saving import legacy_h5_format

    from actrec.backbones.build import build_plain_backbone

    path = tmp_path_factory.mktemp("downloads") / MOBILENET_V2.file_name
    with h5py.File(path, "w") as stream:
        legacy_h5_format.save_weights_to_hdf5_group(
            stream, build_plain_backbone(backbone_spec("mobilenet_v2"), (32, 32, 3))
        )
    return path


def run(environment, *arguments):
    return CliRunner().invoke(main, ["pretrained", *arguments], env=environment)


def test_list_shows_every_known_file_present_or_not(environment):
    result = run(environment, "list")
    assert result.exit_code == 0, result.output
    assert result.output.count("missing") == len(weighted_backbone_names())
    assert "test_mobilenet_v2" not in result.output  # a test network has no weight file
    assert "nonepublished" in flat(result.output)  # MobileNetV2: Keras publishes no digest
    rows = json.loads(run(environment, "list", "--json").output)
    assert [row["backbone"] for row in rows] == weighted_backbone_names()
    by_backbone = {row["backbone"]: row for row in rows}
    assert by_backbone["resnet50"] == {
        "backbone": "resnet50",
        "file": RESNET50.file_name,
        "url": RESNET50.url,
        "hash_algorithm": "md5",
        "file_hash": "4d473c1dd8becc155b73f8504c6f6626",
        "location": "missing",
        "path": None,
    }
    assert by_backbone["mobilenet_v2"]["file_hash"] is None


def test_offline_fetch_names_the_file_url_and_import_command(environment):
    result = run(environment, "fetch", "resnet50")
    assert result.exit_code == 1
    output = flat(result.output)
    assert RESNET50.file_name in output
    assert RESNET50.url in output
    assert "actrecpretrainedimport" in output
    assert "Traceback" not in result.output


def test_a_test_network_has_no_weights_to_fetch_or_import(environment, mobilenet_v2_download):
    for arguments in (
        ["fetch", "test_mobilenet_v2"],
        ["import", str(mobilenet_v2_download), "--backbone", "test_mobilenet_v2"],
    ):
        result = run(environment, *arguments)
        assert result.exit_code != 0
        assert "testnetworkwithnoImageNetweights" in flat(result.output)
        assert "Traceback" not in result.output


def test_import_with_matching_sha256_installs_and_list_shows_it(
    environment, mobilenet_v2_download, tmp_path
):
    sha256 = hashlib.sha256(mobilenet_v2_download.read_bytes()).hexdigest()
    result = run(environment, "import", str(mobilenet_v2_download), "--sha256", sha256)
    assert result.exit_code == 0, result.output
    installed = tmp_path / "store" / MOBILENET_V2.file_name
    assert installed.read_bytes() == mobilenet_v2_download.read_bytes()
    manifest = json.loads((tmp_path / "store" / "manifest.json").read_text())
    assert manifest["files"][MOBILENET_V2.file_name]["sha256"] == sha256
    listing = run(environment, "list", "--verify")
    assert listing.output.count("missing") == len(weighted_backbone_names()) - 1
    rows = json.loads(run(environment, "list", "--json", "--verify").output)
    present = [row for row in rows if row["location"] != "missing"]
    assert [(row["backbone"], row["location"], row["path"]) for row in present] == [
        ("mobilenet_v2", "store", str(installed))
    ]
    assert present[0]["checked"] == "the SHA-256 recorded at installation"
    installed.write_bytes(b"changed")
    rows = json.loads(run(environment, "list", "--json", "--verify").output)
    assert "changed since" in next(row for row in rows if row["path"])["mismatch"]


def test_import_with_mismatched_sha256_installs_nothing(
    environment, mobilenet_v2_download, tmp_path
):
    result = run(environment, "import", str(mobilenet_v2_download), "--sha256", "ab" * 32)
    assert result.exit_code == 1
    assert "SHA-256" in result.output
    store = tmp_path / "store"
    assert not store.exists() or list(store.iterdir()) == []


def test_import_of_a_file_failing_keras_md5_installs_nothing(
    environment, mobilenet_v2_download, tmp_path
):
    result = run(environment, "import", str(mobilenet_v2_download), "--backbone", "resnet50")
    assert result.exit_code == 1
    assert RESNET50.file_hash in flat(result.output)
    store = tmp_path / "store"
    assert not store.exists() or list(store.iterdir()) == []


def test_import_of_an_unknown_file_name_asks_for_the_backbone(environment, tmp_path):
    unknown = tmp_path / "weights.h5"
    unknown.write_bytes(b"x")
    result = run(environment, "import", str(unknown))
    assert result.exit_code == 1
    assert "--backbone" in result.output


def test_fetch_from_a_mirror_url(environment, mobilenet_v2_download, tmp_path):
    environment = {**environment, "ACTREC_OFFLINE": "0"}
    result = run(environment, "fetch", "mobilenet_v2", "--url", mobilenet_v2_download.as_uri())
    assert result.exit_code == 0, result.output
    installed = tmp_path / "store" / MOBILENET_V2.file_name
    assert installed.read_bytes() == mobilenet_v2_download.read_bytes()
