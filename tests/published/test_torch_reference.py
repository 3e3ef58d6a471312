"""Self-checks of the PyTorch reference networks (tests/published/torch_reference.py): their
keys, the shift, the online demo's frame-by-frame forward, the logits' spread and the files."""

from __future__ import annotations

import hashlib
import re
import zipfile

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch_reference as ref  # noqa: E402
from torch_reference_resnet import MMTemporalShift  # noqa: E402


def _frames(shape, seed=1):
    return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)


def test_tsm_resnet50_keys_follow_the_tsm_repository():
    keys = ref.tsm_resnet(5, 8).state_dict()
    for index in range(3):  # blockres: every block's conv1 wrapped (`.net`)
        assert f"base_model.layer1.{index}.conv1.net.weight" in keys
        assert f"base_model.layer1.{index}.conv1.weight" not in keys
    assert "base_model.layer4.2.conv1.net.weight" in keys
    assert "base_model.layer1.0.conv2.weight" in keys
    assert "base_model.layer1.0.downsample.0.weight" in keys
    assert "base_model.layer1.0.downsample.1.running_var" in keys
    assert "base_model.bn1.num_batches_tracked" in keys
    assert "base_model.fc.weight" not in keys  # replaced by Dropout
    assert tuple(keys["new_fc.weight"].shape) == (5, 2048)
    assert len(keys) == 320
    tsn = ref.tsm_resnet(5, 8, is_shift=False).state_dict()
    assert not [key for key in tsn if ".net." in key]
    assert "base_model.layer1.0.conv1.weight" in tsn
    flow = ref.tsm_resnet(5, 8, modality="Flow").state_dict()
    assert tuple(flow["base_model.conv1.weight"].shape) == (64, 10, 7, 7)


def test_tsm_resnet101_shifts_every_other_block():
    keys = ref.tsm_resnet(5, 8, depth=101).state_dict()
    assert "base_model.layer3.22.conv1.net.weight" in keys
    assert "base_model.layer3.1.conv1.weight" in keys
    assert "base_model.layer1.1.conv1.weight" in keys
    assert "base_model.layer1.2.conv1.net.weight" in keys
    assert len([key for key in keys if ".net." in key]) == 2 + 2 + 12 + 2


def test_mmaction_keys_follow_conv_modules():
    keys = ref.mmaction_recognizer(7, 8).state_dict()
    assert "backbone.conv1.conv.weight" in keys
    assert "backbone.conv1.bn.running_var" in keys
    assert "backbone.layer1.0.conv1.conv.net.weight" in keys
    assert "backbone.layer1.0.conv2.conv.weight" in keys
    assert "backbone.layer1.0.downsample.conv.weight" in keys
    assert "backbone.layer1.0.downsample.bn.weight" in keys
    assert tuple(keys["cls_head.fc_cls.weight"].shape) == (7, 2048)
    assert len(keys) == 320
    flow = ref.mmaction_recognizer(7, 3, architecture="tsn", modality="flow").state_dict()
    assert tuple(flow["backbone.conv1.conv.weight"].shape) == (64, 10, 7, 7)
    assert not [key for key in flow if ".net." in key]


def test_mobilenet_keys():
    keys = ref.tsm_mobilenet_v2(6, 8).state_dict()
    shifted = sorted(int(k.split(".")[2]) for k in keys if k.endswith(".conv.0.net.weight"))
    assert shifted == [3, 5, 6, 8, 9, 10, 12, 13, 15, 16]
    assert tuple(keys["new_fc.weight"].shape) == (6, 1280)
    online = ref.online_mobilenet_v2().state_dict()
    assert [key.replace("base_model.", "").replace(".net", "") for key in keys][:-2] == list(
        online
    )[:-2]
    assert tuple(online["classifier.weight"].shape) == (27, 1280)
    assert tuple(online["features.18.0.weight"].shape) == (1280, 320, 1, 1)


def test_torchvision_keys():
    keys = ref.torchvision_resnet().state_dict()
    assert len(keys) == 320
    assert list(keys)[:2] == ["conv1.weight", "bn1.weight"]
    assert "layer1.0.downsample.0.weight" in keys
    assert tuple(keys["fc.weight"].shape) == (1000, 2048)


def test_the_shift_moves_a_fold_each_way():
    t, c = 3, 8  # fold = 8 // 4 = 2
    x = torch.tensor([[100.0 * s + k for k in range(c)] for s in range(t)]).view(t, c, 1, 1)
    out = ref.TemporalShift(torch.nn.Identity(), n_segment=t, n_div=4)(x).view(t, c)
    expected = torch.tensor(
        [
            [100, 101, 0, 0, 4, 5, 6, 7],  # from the next frame; zeros: no previous frame
            [200, 201, 2, 3, 104, 105, 106, 107],
            [0, 0, 102, 103, 204, 205, 206, 207],
        ],
        dtype=torch.float32,
    )
    torch.testing.assert_close(out, expected)
    mmaction = MMTemporalShift(torch.nn.Identity(), num_segments=t, shift_div=4)
    torch.testing.assert_close(mmaction(x).view(t, c), expected)
    two_clips = torch.cat([x, x + 1000])
    shifted = ref.TemporalShift.shift(two_clips, t, fold_div=4).view(2 * t, c)
    torch.testing.assert_close(shifted[:t], expected)  # clips do not mix


def test_the_online_forward_frame_by_frame_equals_the_clip_forward():
    model = ref.randomise_(ref.online_mobilenet_v2(5), seed=3)
    clip = torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    stepped = model.step_frames(clip)
    with torch.no_grad():
        whole = model.classifier(model.clip_features(clip))
        alone = torch.cat([model.step_frames(frame[None]) for frame in clip])
    torch.testing.assert_close(stepped, whole, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(stepped[0], alone[0])
    assert not torch.allclose(stepped[1:], alone[1:], atol=1e-3)  # the buffers carry


@pytest.mark.parametrize(
    ("build", "channels"),
    [
        (lambda: ref.tsm_resnet(9, 4), 3),
        (lambda: ref.tsm_resnet(9, 2, modality="Flow", new_length=2), 4),
        (lambda: ref.mmaction_recognizer(9, 4), 3),
        (lambda: ref.mmaction_recognizer(9, 2, architecture="tsn", modality="flow"), 10),
        (lambda: ref.tsm_mobilenet_v2(9, 4), 3),
        (ref.online_mobilenet_v2, 3),
        (ref.torchvision_resnet, 3),
    ],
)
def test_random_models_spread_their_logits(build, channels):
    model = ref.randomise_(build(), seed=5)
    segments = getattr(model, "num_segments", 3)
    for size in (32, 64):
        logits, features = ref.reference_outputs(
            model, _frames((2, segments, size, size, channels))
        )
        assert logits.shape[0] == 2 and features.shape[0] == 2 * segments
        assert np.isfinite(features).all() and logits.std() >= 1.0
        assert np.abs(logits[0] - logits[1]).max() > 0.01  # the frames matter
    bn = next(m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d))
    assert (bn.running_var > 0).all() and bn.running_var.max() > 1.5 * bn.running_var.min()


def test_reference_outputs_are_the_models_forward():
    frames = _frames((2, 4, 32, 32, 3))
    tsm = ref.randomise_(ref.tsm_resnet(6, 4), seed=1)
    logits, _ = ref.reference_outputs(tsm, frames)
    with torch.no_grad():
        torch.testing.assert_close(torch.from_numpy(logits), tsm(ref.source_inputs(tsm, frames)))
    mm = ref.randomise_(ref.mmaction_recognizer(6, 4, architecture="tsn"), seed=1)
    logits, _ = ref.reference_outputs(mm, frames)
    with torch.no_grad():
        expected = mm(ref.source_inputs(mm, frames), 4)
    torch.testing.assert_close(torch.from_numpy(logits), expected)
    again = ref.randomise_(ref.tsm_resnet(6, 4), seed=1)
    for key, value in tsm.state_dict().items():
        torch.testing.assert_close(again.state_dict()[key], value)


def test_each_source_normalises_its_own_way():
    flow = np.zeros((1, 1, 2, 2, 4), dtype=np.uint8)
    flow[..., 1] = 255  # y0: the second channel, as both sources interleave
    tsm = ref.source_inputs(ref.tsm_resnet(2, 1, modality="Flow", new_length=2), flow)
    assert tsm.shape == (1, 4, 2, 2)
    np.testing.assert_allclose(tsm[0, :, 0, 0], [-0.5 / 0.226, 0.5 / 0.226, -2.2124, -2.2124], 1e-4)
    mm = ref.source_inputs(
        ref.mmaction_recognizer(2, 1, architecture="tsn", modality="flow", clip_len=2), flow
    )
    np.testing.assert_allclose(mm[0, :, 0, 0], [-1, 127 / 128, -1, -1])
    rgb = np.full((1, 1, 1, 1, 3), 255, dtype=np.uint8)
    tsm_rgb = ref.source_inputs(ref.tsm_resnet(2, 1), rgb)[0, :, 0, 0]
    np.testing.assert_allclose(tsm_rgb, (1 - np.array(ref.IMAGENET_MEAN)) / ref.IMAGENET_STD, 1e-6)
    mm_rgb = ref.source_inputs(ref.mmaction_recognizer(2, 1), rgb)[0, :, 0, 0]
    np.testing.assert_allclose(mm_rgb, (255 - np.array(ref.MMACTION_MEAN)) / ref.MMACTION_STD, 1e-6)


def _load(path):
    return torch.load(path, map_location="cpu", weights_only=True)


def test_tsm_files_are_legacy_checkpoints_of_the_dataparallel_model(tmp_path):
    tsm = ref.randomise_(ref.tsm_resnet(4, 8), seed=2)
    path = ref.save_tsm(tsm, tmp_path)
    assert path.name == "TSM_kinetics_RGB_resnet50_shift8_blockres_avg_segment8_e50.pth"
    assert not zipfile.is_zipfile(path)  # legacy format
    checkpoint = _load(path)
    assert list(checkpoint) == ["epoch", "arch", "state_dict", "best_prec1"]
    assert checkpoint["arch"] == "resnet50" and checkpoint["epoch"] == 50
    state = checkpoint["state_dict"]
    assert "module.base_model.layer1.0.conv1.net.weight" in state
    torch.testing.assert_close(state["module.new_fc.weight"], tsm.new_fc.weight)
    tsn = ref.tsm_resnet(4, 5, is_shift=False)
    assert ref.tsm_file_name(tsn) == "TSM_kinetics_RGB_resnet50_avg_segment5_e50.pth"
    flow = ref.tsm_resnet(4, 8, modality="Flow")
    assert ref.tsm_file_name(flow).startswith("TSM_kinetics_Flow_resnet50_shift8_blockres_")
    mobilenet = ref.tsm_mobilenet_v2(4, 8)
    path = ref.save_tsm(mobilenet, tmp_path, with_optimizer=True)
    assert path.name == "TSM_kinetics_RGB_mobilenetv2_shift8_blockres_avg_segment8_e50.pth"
    assert list(_load(path)) == ["epoch", "arch", "state_dict", "optimizer", "best_prec1"]


def test_mmaction_files_are_mmengine_checkpoints(tmp_path):
    mm = ref.mmaction_recognizer(4, 8)
    path = ref.save_mmaction(mm, tmp_path)
    assert re.fullmatch(
        r"tsm_imagenet-pretrained-r50_8xb16-1x1x8-50e_kinetics400-rgb_20220831-[0-9a-f]{8}\.pth",
        path.name,
    )
    assert hashlib.sha256(path.read_bytes()).hexdigest()[:8] == path.stem[-8:]
    assert zipfile.is_zipfile(path)
    checkpoint = _load(path)
    assert list(checkpoint) == ["meta", "state_dict", "message_hub"]
    assert "backbone.layer1.0.conv1.conv.net.weight" in checkpoint["state_dict"]
    published = _load(ref.save_mmaction(mm, tmp_path / "p.pth", with_message_hub=False))
    assert list(published) == ["meta", "state_dict"]
    flow = ref.mmaction_recognizer(4, 3, architecture="tsn", modality="flow")
    assert ref.save_mmaction(flow, tmp_path).name.startswith(
        "tsn_imagenet-pretrained-r50_8xb32_5x1x3-110e_kinetics400-flow_20220831-"
    )


def test_torchvision_and_online_demo_files_are_bare_state_dicts(tmp_path):
    path = ref.save_torchvision(ref.torchvision_resnet(), tmp_path)
    assert path.name == "resnet50-0676ba61.pth" and zipfile.is_zipfile(path)
    assert list(_load(path))[-1] == "fc.bias"

    path = ref.save_online_demo(ref.online_mobilenet_v2(), tmp_path)
    assert path.name == "mobilenetv2_jester_online.pth.tar" and not zipfile.is_zipfile(path)
    assert "features.3.conv.0.weight" in _load(path)
