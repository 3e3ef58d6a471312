"""The published-source registry (actrec.published.sources): each source's contract is
complete (its families load into registered backbones, docs/model-zoo.md has its section),
each recognises its own keys, those of its reference networks' checkpoints included, and no
other source claims them, a ResNet's depth comes from every stage's block count, and a
conversion's settings follow one precedence (option > tensors > file name > the source's
default > actrec's)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from repo_paths import REPO_ROOT

from actrec.backbones.registry import PUBLISHED_LAYOUTS, backbone_spec
from actrec.errors import ConfigError, WeightsError
from actrec.published.file_names import NamedSettings, settings_from_file_name
from actrec.published.layouts import RESNET_DEPTHS, published_network
from actrec.published.sources.registry import PublishedSource, published_sources, source_named

KEYS = {
    "tsm": ["base_model.conv1.weight", "base_model.layer1.0.conv1.net.weight", "new_fc.weight"],
    "mmaction2": ["backbone.conv1.conv.weight", "cls_head.fc_cls.weight"],
    "torchvision": ["conv1.weight", "bn1.weight", "layer1.0.conv1.weight", "fc.weight"],
    "mobilenet": ["features.0.0.weight", "features.1.conv.0.weight", "classifier.weight"],
}
"""Each source's keys, as its files hold them (DataParallel's `module.` removed)."""
REFERENCE_CHECKPOINTS = [
    ("tsm", "tsm_resnet", {"num_class": 400, "num_segments": 8}, "resnet50_torchvision"),
    ("tsm", "tsm_mobilenet_v2", {"num_class": 27, "num_segments": 8}, "mobilenet_v2_tsm"),
    (
        "mmaction2",
        "mmaction_recognizer",
        {"num_classes": 400, "num_segments": 8},
        "resnet50_torchvision",
    ),
    (
        "mmaction2",
        "mmaction_recognizer",
        {"num_classes": 400, "num_segments": 3, "architecture": "tsn", "modality": "flow"},
        "resnet50_torchvision",
    ),
    ("torchvision", "torchvision_resnet", {"depth": 101}, "resnet101_torchvision"),
    ("mobilenet", "mobilenet_v2", {}, "mobilenet_v2_tsm"),
    ("mobilenet", "online_mobilenet_v2", {}, "mobilenet_v2_tsm"),
]
"""(source, reference network of tests/published/torch_reference*.py, its arguments, the
backbone it loads into): each source's networks, as tests/published/test_published_convert.py
converts them."""


def test_every_source_is_registered_with_a_complete_contract():
    sources = published_sources()
    assert {source.name for source in sources} == set(KEYS)
    for source in sources:
        assert isinstance(source, PublishedSource)
        for item in dataclasses.fields(source):
            assert getattr(source, item.name) is not None, (source.name, item.name)
        assert source.title and source.key_form and source.backbones and source.docs_section
        assert source.module_name("conv1") == "conv1" or source.name == "mmaction2"


@pytest.mark.parametrize("name", sorted(KEYS))
def test_each_source_claims_its_keys_and_no_other_does(name):
    claims = [source.name for source in published_sources() if source.claims(KEYS[name])]
    assert claims == [name]


@pytest.mark.parametrize(("name", "builder", "arguments", "backbone"), REFERENCE_CHECKPOINTS)
def test_each_source_claims_its_reference_checkpoints_and_no_other_does(
    name, builder, arguments, backbone
):
    """The state dict as the source's file holds it (TSM's main.py saves the DataParallel
    model: `module.` keys; tests/published/torch_reference.py's save_* write these)."""
    reference = pytest.importorskip("torch_reference")  # torch
    from torch import nn

    model = getattr(reference, builder)(**arguments)
    state = (nn.DataParallel(model) if name == "tsm" else model).state_dict()
    keys = [key.removeprefix("module.") for key in state]
    assert [source.name for source in published_sources() if source.claims(keys)] == [name]
    network = published_network({key: value.numpy() for key, value in state.items()})
    assert network.source is source_named(name) and network.layout == name
    assert network.backbone == backbone


def test_every_source_s_families_load_into_registered_pytorch_backbones():
    for source in published_sources():
        assert set(source.backbones) <= set(PUBLISHED_LAYOUTS), source.name
        for family in source.backbones:
            for depth in RESNET_DEPTHS.values() if family == "resnet" else (None,):
                spec = backbone_spec(source.backbone(family, depth))
                assert (spec.layout, spec.shift_family) == ("pytorch", family), spec.name
    with pytest.raises(WeightsError, match=r"a mobilenet_v2 network in mmaction2's layout"):
        source_named("mmaction2").backbone("mobilenet_v2")


def test_every_source_has_its_section_in_the_model_zoo():
    page = (REPO_ROOT / "docs" / "model-zoo.md").read_text(encoding="utf-8")
    headings = [line[3:] for line in page.splitlines() if line.startswith("## ")]
    for source in published_sources():
        assert any(heading.startswith(source.docs_section) for heading in headings), source.name


def test_the_classifier_of_every_source_is_one_module():
    for source in published_sources():
        classifier_key = next(
            key for key in KEYS[source.name] if "fc" in key or "classifier" in key
        )
        module = classifier_key.rpartition(".")[0]
        assert source.module_name(module) == "classifier", source.name


def _resnet(blocks: tuple[int, ...], bottleneck: bool = True) -> dict[str, np.ndarray]:
    """A torchvision ResNet's state dict, one small tensor per module."""
    convs = (1, 2, 3) if bottleneck else (1, 2)
    state = {"conv1.weight": np.zeros((8, 3, 7, 7)), "fc.weight": np.zeros((1000, 8))}
    for stage, count in enumerate(blocks, start=1):
        for block in range(count):
            for index in convs:
                state[f"layer{stage}.{block}.conv{index}.weight"] = np.zeros((8, 8, 1, 1))
    return state


def test_the_depth_comes_from_every_stage_and_the_block_kind():
    assert published_network(_resnet((3, 4, 6, 3))).backbone == "resnet50_torchvision"
    assert published_network(_resnet((3, 4, 23, 3))).backbone == "resnet101_torchvision"
    # ResNet-34 shares ResNet-50's layer3 (6 blocks): its blocks are basic ones
    with pytest.raises(WeightsError, match=r"basic \(two-convolution\) blocks, \(3, 4, 6, 3\)"):
        _ = published_network(_resnet((3, 4, 6, 3), bottleneck=False)).backbone
    # ResNet-152: (3, 8, 36, 3)
    with pytest.raises(WeightsError, match=r"bottleneck blocks, \(3, 8, 36, 3\) per stage"):
        _ = published_network(_resnet((3, 8, 36, 3))).backbone


def test_file_names_are_read_by_their_source_alone():
    tsm = settings_from_file_name("TSM_kinetics_RGB_resnet50_shift8_blockres_avg_segment8_e50.pth")
    assert tsm.source == "tsm" and tsm.settings["model.shift_fraction"] == 0.125
    assert settings_from_file_name("resnet50-0676ba61.pth") == NamedSettings()
    for source in published_sources():
        for name in ("resnet50-0676ba61.pth", "my_model.pth"):
            assert source.named_settings(name) is None and source.download_hint(name) is None


def test_a_conversion_s_settings_follow_one_precedence():
    from actrec.published.convert import ConversionOptions, _settings

    network = published_network(
        {
            "base_model.conv1.weight": np.zeros((64, 3, 7, 7)),
            "base_model.layer1.0.conv3.weight": np.zeros((8, 8, 1, 1)),
            "base_model.layer1.0.conv1.net.weight": np.zeros((8, 8, 1, 1)),
            **{
                f"base_model.layer{stage}.{block}.conv3.weight": np.zeros((8, 8, 1, 1))
                for stage, count in enumerate((3, 4, 6, 3), start=1)
                for block in range(count)
            },
            "new_fc.weight": np.zeros((400, 8)),
        }
    )
    named = settings_from_file_name("TSM_kinetics_Flow_resnet50_shift4_block_avg_segment16_e50.pth")
    settings = _settings(network, named, ConversionOptions(num_segments=4))
    assert settings["data.num_segments"] == (4, "option")  # over the name's 16
    assert settings["data.modality"] == ("rgb", "tensors")  # over the name's flow
    assert settings["model.shift_placement"] == ("blockres", "tensors")  # over the name's block
    assert settings["model.shift_fraction"] == (0.25, "file name")
    assert settings["model.shift_direction"] == ("bidirectional", "default")
    with pytest.raises(ConfigError, match=r"--modality flow: the checkpoint's tensors are a rgb"):
        _settings(network, named, ConversionOptions(modality="flow"))
    # the architecture has no weights: an option may make the TSM's tensors a TSN
    tsn = _settings(network, named, ConversionOptions(architecture="tsn"))
    assert tsn["model.architecture"] == ("tsn", "option")


def test_a_missing_mmaction2_file_is_named_with_its_whole_url():
    """The URLs mmaction2's READMEs link (1.x and 0.x), built from the file name alone."""
    from actrec.published.downloads import download_hint

    new = "tsm_imagenet-pretrained-r50_8xb16-1x1x8-50e_kinetics400-rgb_20220831-64d69186.pth"
    assert download_hint(new) == (
        "download it from https://download.openmmlab.com/mmaction/v1.0/recognition/tsm/"
        f"tsm_imagenet-pretrained-r50_8xb16-1x1x8-50e_kinetics400-rgb/{new}"
    )
    old = "tsn_r50_320p_1x1x3_110e_kinetics400_flow_20200705-3036bab6.pth"
    assert download_hint(old) == (
        "download it from https://download.openmmlab.com/mmaction/recognition/tsn/"
        f"tsn_r50_320p_1x1x3_110e_kinetics400_flow/{old}"
    )
