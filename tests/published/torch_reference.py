"""PyTorch reference networks of the published video models, for checking actrec's
converter (actrec.published): random weights and BatchNorm statistics in the sources'
exact module structure (state-dict keys, shapes, forward computation) and checkpoint
formats. A helper module of the tests (torch needed), not a test file.

    tsm_resnet(...)           TSM repository's TSN / TSM on torchvision's ResNet-50 / 101
                              (ops/models.py, ops/temporal_shift.py), RGB or Flow
    tsm_mobilenet_v2(...)     TSM repository's TSN / TSM on archs/mobilenet_v2.py
    online_mobilenet_v2(...)  the online demo's network (online_demo/mobilenet_v2_tsm.py)
    mmaction_recognizer(...)  mmaction2's Recognizer2D: TSN (ResNet + TSNHead) or TSM
                              (ResNetTSM + TSMHead), RGB or flow
    torchvision_resnet(...)   torchvision's ImageNet ResNet-50 / 101
    mobilenet_v2(...)         TSM's ImageNet MobileNetV2

    randomise_(model, seed)            random weights and statistics, spread logits
    reference_outputs(model, frames)   (logits [B, K], pooled features [B*T, F]) as numpy
    save_tsm / save_mmaction / save_torchvision / save_online_demo   the sources' files

Frames are numpy [B, T, H, W, C] in 0-255: RGB (C = 3), or quantised flow (C = 2L,
interleaved x0, y0, x1, y1, ... as actrec stores it, which is also both sources' channel
order); each source's own normalisation is applied here.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch_reference_mobilenet import (
    MobileNetV2,
    OnlineMobileNetV2,
    mobilenet_v2,
    online_mobilenet_v2,
    tsm_mobilenet_v2,
)
from torch_reference_resnet import (
    TSN,
    Recognizer2D,
    ResNet,
    TemporalShift,
    mmaction_recognizer,
    torchvision_resnet,
    tsm_resnet,
)

__all__ = [
    "TSN",
    "MobileNetV2",
    "OnlineMobileNetV2",
    "Recognizer2D",
    "ResNet",
    "TemporalShift",
    "mmaction_recognizer",
    "mobilenet_v2",
    "online_mobilenet_v2",
    "randomise_",
    "reference_outputs",
    "save_mmaction",
    "save_online_demo",
    "save_torchvision",
    "save_tsm",
    "source_inputs",
    "torchvision_resnet",
    "tsm_file_name",
    "tsm_mobilenet_v2",
    "tsm_resnet",
]

# One thread, as the suite's TensorFlow (tests/conftest.py): two pytest-xdist workers share
# the cores.
torch.set_num_threads(1)

IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]
TSM_FLOW_MEAN, TSM_FLOW_STD = 0.5, float(np.mean(IMAGENET_STD))  # ops/models.py: [0.5], mean std
MMACTION_MEAN = [123.675, 116.28, 103.53]  # configs/_base_/models/tsn_r50.py, tsm_r50.py
MMACTION_STD = [58.395, 57.12, 57.375]
MMACTION_FLOW_MEAN = MMACTION_FLOW_STD = 128.0  # tsn_..._kinetics400-flow.py: [128, 128] * L
TORCHVISION_FILES = {50: "resnet50-0676ba61.pth", 101: "resnet101-63fe2227.pth"}
ONLINE_DEMO_FILE = "mobilenetv2_jester_online.pth.tar"


# Inputs and outputs --------------------------------------------------------------------


def _is_mmaction(model) -> bool:
    return isinstance(model, Recognizer2D)


def source_inputs(model: nn.Module, frames) -> torch.Tensor:
    """`frames` [B, T, H, W, C] (0-255) as the model's source feeds its network: float32
    [B*T, C, H, W], normalised per channel (TSM: x / 255, then (x - mean) / std; mmaction2's
    data preprocessor: (x - mean) / std in 0-255 units)."""
    array = np.asarray(frames)
    b, t, h, w, c = array.shape
    x = torch.from_numpy(np.ascontiguousarray(array.reshape(b * t, h, w, c)))
    x = x.permute(0, 3, 1, 2).contiguous().float()
    flow = getattr(model, "modality", "RGB").lower() == "flow"
    if _is_mmaction(model):
        mean = [MMACTION_FLOW_MEAN] * c if flow else MMACTION_MEAN
        std = [MMACTION_FLOW_STD] * c if flow else MMACTION_STD
        mean_t = torch.tensor(mean, dtype=torch.float32).view(-1, 1, 1)
        return (x - mean_t) / torch.tensor(std, dtype=torch.float32).view(-1, 1, 1)
    x = x.div(255)  # ops/transforms.py ToTorchFormatTensor, then GroupNormalize
    mean = [TSM_FLOW_MEAN] * c if flow else IMAGENET_MEAN
    std = [TSM_FLOW_STD] * c if flow else IMAGENET_STD
    for channel in range(c):
        x[:, channel].sub_(mean[channel]).div_(std[channel])
    return x


@torch.no_grad()
def reference_outputs(model: nn.Module, frames) -> tuple[np.ndarray, np.ndarray]:
    """(logits [B, K], pooled features [B*T, F]) of `model` (eval mode) on `frames`.

    logits: the source's segment consensus (the mean over T; TSN heads average features
    before the classifier, TSM heads the per-frame logits). A torchvision / MobileNetV2
    ImageNet classifier: the mean of the per-frame logits. The online demo's network: the
    mean of its per-frame logits run frame by frame over each clip (buffers from zeros)."""
    model.eval()
    array = np.asarray(frames)
    b, t = array.shape[:2]
    x = source_inputs(model, array)
    shifted = getattr(model, "is_shift", False) or (
        _is_mmaction(model) and model.architecture == "tsm"
    )
    if shifted and t != model.num_segments:
        raise ValueError(f"{t} frames for a model built for {model.num_segments} segments")
    if isinstance(model, OnlineMobileNetV2):
        clips = x.view(b, t, *x.shape[1:])
        features = torch.cat([model.clip_features(clip) for clip in clips])
        logits = torch.stack([model.step_frames(clip).mean(0) for clip in clips])
    elif isinstance(model, TSN):
        features = model.features(x)
        logits = model.new_fc(features).view(b, t, -1).mean(dim=1)
    elif _is_mmaction(model):
        feature_map = model.backbone(x)
        features = torch.flatten(model.cls_head.avg_pool(feature_map), 1)
        logits = model.cls_head(feature_map, t)
    else:  # an ImageNet classifier
        features = _imagenet_features(model, x)
        logits = _classifier(model)(features).view(b, t, -1).mean(dim=1)
    return logits.numpy(), features.numpy()


def _imagenet_features(model, x):
    if isinstance(model, ResNet):
        x = model.maxpool(model.relu(model.bn1(model.conv1(x))))
        x = model.layer4(model.layer3(model.layer2(model.layer1(x))))
        return torch.flatten(model.avgpool(x), 1)
    return model.features(x).mean(3).mean(2)


def _classifier(model) -> nn.Linear:
    if isinstance(model, TSN):
        return model.new_fc
    if _is_mmaction(model):
        return model.cls_head.fc_cls
    return model.fc if isinstance(model, ResNet) else model.classifier


def _input_channels(model) -> int:
    first = next(m for m in model.modules() if isinstance(m, nn.Conv2d))
    return first.in_channels


# Random weights ------------------------------------------------------------------------


@torch.no_grad()
def randomise_(model: nn.Module, seed: int, *, logit_std: float = 3.0) -> nn.Module:
    """Random weights in place, eval mode. Convolutions N(0, 2 / fan_in); BatchNorm weight
    U(0.5, 2), bias U(-0.5, 0.5), num_batches_tracked a count, and running statistics drawn
    around those of random 48-px frames (the seed's): running_mean = mean + U(-0.5, 0.5) *
    std, running_var = var * U(0.5, 2) (positive and spread, so a wrong epsilon or a missing
    BatchNorm shows, while activations keep unit scale through the depth, as a trained
    network's do, and ReLU6 does not saturate). The classifier (N(0, 1 / fan_in), bias
    0.1 N(0, 1)) is then scaled so that the logits on those frames have standard deviation
    `logit_std`."""
    generator = torch.Generator().manual_seed(seed)

    def uniform(size, low, high):
        return low + (high - low) * torch.rand(size, generator=generator)

    for module in model.modules():
        if isinstance(module, nn.Conv2d):
            fan_in = module.weight[0].numel()
            module.weight.copy_(torch.randn(module.weight.shape, generator=generator))
            module.weight.mul_((2.0 / fan_in) ** 0.5)
        elif isinstance(module, nn.BatchNorm2d):
            module.weight.copy_(uniform(module.num_features, 0.5, 2.0))
            module.bias.copy_(uniform(module.num_features, -0.5, 0.5))
            module.num_batches_tracked.fill_(
                int(torch.randint(1000, 99_999, (1,), generator=generator))
            )
        elif isinstance(module, nn.Linear):
            module.weight.copy_(torch.randn(module.weight.shape, generator=generator))
            module.weight.div_(module.in_features**0.5)
            module.bias.copy_(0.1 * torch.randn(module.bias.shape, generator=generator))
    model.eval()
    calibrated = set()

    def calibrate(module, inputs):  # before the BatchNorm's first (eval-mode) call
        if module in calibrated:
            return
        calibrated.add(module)
        x = inputs[0].transpose(0, 1).flatten(1)
        mean, var = x.mean(1), x.var(1).clamp_min(1e-3)
        n = module.num_features
        module.running_mean.copy_(mean + uniform(n, -0.5, 0.5) * var.sqrt())
        module.running_var.copy_(var * uniform(n, 0.5, 2.0))

    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    hooks = [bn.register_forward_pre_hook(calibrate) for bn in bns]
    segments = getattr(model, "num_segments", 8)  # image and online models: any T
    shape = (2, segments, 48, 48, _input_channels(model))
    frames = torch.randint(0, 256, shape, generator=generator, dtype=torch.uint8).numpy()
    try:
        logits, _ = reference_outputs(model, frames)
    finally:
        for hook in hooks:
            hook.remove()
    classifier = _classifier(model)
    scale = logit_std / float(logits.std())
    classifier.weight.mul_(scale)
    classifier.bias.mul_(scale)
    return model


# Files ---------------------------------------------------------------------------------


def _destination(destination, name: str) -> Path:
    path = Path(destination)
    return path / name if path.is_dir() else path


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tsm_file_name(model: TSN, dataset: str = "kinetics", epochs: int = 50) -> str:
    """TSM's main.py store name: TSM_{dataset}_{RGB|Flow}_{arch}[_shift{div}_blockres]_avg_
    segment{T}_e{epochs}.pth (README: TSN files have no _shift part)."""
    arch = model.arch + (f"_shift{model.shift_div}_blockres" if model.is_shift else "")
    parts = ["TSM", dataset, model.modality, arch, "avg", f"segment{model.num_segments}"]
    return "_".join([*parts, f"e{epochs}"]) + ".pth"


def save_tsm(
    model: TSN,
    destination,
    *,
    dataset: str = "kinetics",
    epochs: int = 50,
    best_prec1: float = 71.2,
    with_optimizer: bool = False,
) -> Path:
    """TSM's main.py save_checkpoint of the DataParallel model: {'epoch', 'arch',
    'state_dict' (keys `module.`...), 'best_prec1'} (+ 'optimizer', an SGD state dict, as
    main.py saves it while training), in torch's legacy (pre-1.6, non-zip) format.
    `destination`: a file, or a folder for tsm_file_name's name. Returns the path."""
    path = _destination(destination, tsm_file_name(model, dataset, epochs))
    state = nn.DataParallel(model).state_dict()  # `module.` keys and their _metadata
    checkpoint = {"epoch": epochs, "arch": model.arch, "state_dict": state}
    if with_optimizer:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        checkpoint["optimizer"] = optimizer.state_dict()
    checkpoint["best_prec1"] = float(best_prec1)
    torch.save(checkpoint, path, _use_new_zipfile_serialization=False)
    return path


def _mmaction_name(model: Recognizer2D) -> str:
    depth = 101 if len(model.backbone.layer3) >= 23 else 50
    sampling = f"{model.clip_len}x1x{model.num_segments}"
    if model.architecture == "tsm":
        return f"tsm_imagenet-pretrained-r{depth}_8xb16-{sampling}-50e_kinetics400-{model.modality}"
    if model.modality == "flow":  # configs/recognition/tsn/..._5x1x3-110e_kinetics400-flow.py
        return f"tsn_imagenet-pretrained-r{depth}_8xb32_{sampling}-110e_kinetics400-flow"
    return f"tsn_imagenet-pretrained-r{depth}_8xb32-{sampling}-100e_kinetics400-rgb"


def _mmaction_config(model: Recognizer2D) -> str:
    """The start of the config's pretty text (meta['cfg']), as the model was built."""
    segments, flow = model.num_segments, model.modality == "flow"
    depth = 101 if len(model.backbone.layer3) >= 23 else 50
    channels = 2 * model.clip_len if flow else 3
    backbone = f"type='ResNet', depth={depth}, in_channels={channels}"
    head = f"type='TSNHead', num_classes={model.cls_head.fc_cls.out_features}"
    if model.architecture == "tsm":
        backbone = backbone.replace("ResNet", "ResNetTSM") + f", num_segments={segments}"
        head = head.replace("TSN", "TSM") + f", num_segments={segments}"
    mean, std = ([128.0] * channels,) * 2 if flow else (MMACTION_MEAN, MMACTION_STD)
    return (
        f"model = dict(\n    type='Recognizer2D',\n    backbone=dict({backbone}),\n"
        f"    cls_head=dict({head}, in_channels=2048),\n"
        f"    data_preprocessor=dict(type='ActionDataPreprocessor', mean={mean}, std={std},\n"
        "        format_shape='NCHW'))\n"
    )


def save_mmaction(model: Recognizer2D, destination, *, with_message_hub: bool = True) -> Path:
    """An mmengine Runner checkpoint: {'meta': {epoch, iter, cfg, seed, experiment_name,
    time, mmengine_version}, 'state_dict', 'message_hub'} (plain dicts; tools/deployment/
    publish_model.py drops message_hub: with_message_hub=False), zip format. A folder
    `destination` gets the published name, `{config}_{date}-{sha256[:8]}.pth`."""
    config = _mmaction_name(model)
    meta = {
        "epoch": 50,
        "iter": 15650,
        "cfg": _mmaction_config(model),
        "seed": 0,
        "experiment_name": config,
        "time": "20220831_120000",
        "mmengine_version": "0.1.0",
    }
    checkpoint = {"meta": meta, "state_dict": model.state_dict()}  # with its _metadata
    if with_message_hub:
        runtime = {"epoch": 50, "iter": 15650, "max_epochs": 50, "max_iters": 15650}
        checkpoint["message_hub"] = {
            "log_scalars": {},
            "runtime_info": runtime,
            "resumed_keys": dict.fromkeys(runtime, True),
        }
    folder = Path(destination)
    path = folder / f"{config}.pth" if folder.is_dir() else folder
    torch.save(checkpoint, path)
    if not folder.is_dir():
        return path
    published = folder / f"{config}_20220831-{_sha256(path)[:8]}.pth"
    os.replace(path, published)
    return published


def save_torchvision(model: ResNet, destination, *, name: str | None = None) -> Path:
    """A bare state dict in the zip format, as torchvision's files (`resnet50-0676ba61.pth`:
    the official name, whose digest a random file does not have)."""
    depth = 101 if len(model.layer3) >= 23 else 50
    path = _destination(destination, name or TORCHVISION_FILES[depth])
    torch.save(model.state_dict(), path)
    return path


def save_online_demo(
    model: nn.Module, destination, *, name: str = ONLINE_DEMO_FILE, legacy: bool = True
) -> Path:
    """A bare state dict (`features.N...`, `classifier`), as online_demo/main.py loads it
    (torch.load then load_state_dict); legacy format (2019, torch < 1.6) unless legacy=False.
    Also TSM's ImageNet MobileNetV2 file (name mobilenetv2_1.0-f2a8633.pth.tar)."""
    path = _destination(destination, name)
    torch.save(model.state_dict(), path, _use_new_zipfile_serialization=not legacy)
    return path
