"""PyTorch ResNet references (see torch_reference): torchvision's ResNet, TSM's TSN / TSM
(mit-han-lab/temporal-shift-module ops/models.py, ops/temporal_shift.py) and mmaction2's
Recognizer2D with ResNet / ResNetTSM and TSNHead / TSMHead. Module names, parameter shapes
and forward computation follow the sources exactly, so their state_dict() keys are the
published files' keys. Inputs are normalised [N*T, C, H, W] tensors (torch_reference
normalises as each source does)."""

from __future__ import annotations

import torch
from torch import nn

RESNET_BLOCKS = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3)}


class TemporalShift(nn.Module):
    """TSM's ops/temporal_shift.py TemporalShift (not in place): a fold = c // n_div of the
    channels from the next segment, the next fold from the previous, zeros at the ends."""

    def __init__(self, net: nn.Module, n_segment: int = 3, n_div: int = 8):
        super().__init__()
        self.net = net
        self.n_segment = n_segment
        self.fold_div = n_div

    def forward(self, x):
        return self.net(self.shift(x, self.n_segment, fold_div=self.fold_div))

    @staticmethod
    def shift(x, n_segment, fold_div=3):
        nt, c, h, w = x.size()
        x = x.view(nt // n_segment, n_segment, c, h, w)
        fold = c // fold_div
        out = torch.zeros_like(x)
        out[:, :-1, :fold] = x[:, 1:, :fold]  # shift left
        out[:, 1:, fold : 2 * fold] = x[:, :-1, fold : 2 * fold]  # shift right
        out[:, :, 2 * fold :] = x[:, :, 2 * fold :]  # not shift
        return out.view(nt, c, h, w)


class MMTemporalShift(nn.Module):
    """mmaction2's resnet_tsm.py TemporalShift: the same shift written with torch.cat."""

    def __init__(self, net: nn.Module, num_segments: int = 3, shift_div: int = 8):
        super().__init__()
        self.net = net
        self.num_segments = num_segments
        self.shift_div = shift_div

    def forward(self, x):
        n, c, h, w = x.size()
        x = x.view(-1, self.num_segments, c, h * w)
        fold = c // self.shift_div
        left, mid, right = x[:, :, :fold], x[:, :, fold : 2 * fold], x[:, :, 2 * fold :]
        left = torch.cat((left[:, 1:], torch.zeros_like(left[:, :1])), 1)
        mid = torch.cat((torch.zeros_like(mid[:, :1]), mid[:, :-1]), 1)
        return self.net(torch.cat((left, mid, right), 2).view(n, c, h, w))


# torchvision/models/resnet.py (ResNet v1.5: the stride on the 3x3 conv) ---------------


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        return self.relu(self.bn3(self.conv3(out)) + identity)


class ResNet(nn.Module):
    """torchvision's ResNet with Bottleneck blocks; `fc` the ImageNet classifier."""

    def __init__(self, depth: int = 50, num_classes: int = 1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        for index, blocks in enumerate(RESNET_BLOCKS[depth]):
            stride = 1 if index == 0 else 2
            setattr(self, f"layer{index + 1}", self._make_layer(64 * 2**index, blocks, stride))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(2048, num_classes)

    def _make_layer(self, planes, blocks, stride):
        downsample = None
        if stride != 1 or self.inplanes != planes * 4:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * 4, 1, stride, bias=False),
                nn.BatchNorm2d(planes * 4),
            )
        layers = [Bottleneck(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * 4
        layers += [Bottleneck(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def torchvision_resnet(depth: int = 50, num_classes: int = 1000) -> ResNet:
    """torchvision.models.resnet50 / resnet101 (keys conv1, bn1, layer1.0.conv1, ..., fc)."""
    return ResNet(depth, num_classes)


# TSM repository: ops/models.py TSN on a torchvision ResNet or archs/mobilenet_v2.py ------


class TSN(nn.Module):
    """ops/models.py TSN after construction: `base_model` (its last layer `fc` /
    `classifier` replaced by Dropout), `new_fc`, avg consensus. forward takes normalised
    [N*T, C, H, W] frames and returns the [N, K] consensus logits."""

    def __init__(
        self, base_model, num_class, num_segments, modality, new_length, is_shift, shift_div, arch
    ):
        super().__init__()
        self.base_model = base_model
        self.num_segments = num_segments
        self.modality = modality
        self.new_length = new_length
        self.is_shift = is_shift
        self.shift_div = shift_div
        self.arch = arch
        last = "fc" if arch.startswith("resnet") else "classifier"
        feature_dim = getattr(base_model, last).in_features
        setattr(base_model, last, nn.Dropout(p=0.8))
        self.new_fc = nn.Linear(feature_dim, num_class)

    def features(self, x):
        """Pooled per-frame features [N*T, F] (the base model's output, dropout off)."""
        return self.base_model(x)

    def forward(self, x):
        base_out = self.new_fc(self.features(x))
        return base_out.view((-1, self.num_segments, *base_out.size()[1:])).mean(1)


def make_temporal_shift(net: ResNet, n_segment: int, n_div: int = 8) -> None:
    """ops/temporal_shift.py make_temporal_shift(place='blockres'): each block's conv1
    wrapped, every other block (n_round 2) when layer3 has 23 blocks or more."""
    n_round = 2 if len(list(net.layer3.children())) >= 23 else 1
    for name in ("layer1", "layer2", "layer3", "layer4"):
        for index, block in enumerate(getattr(net, name).children()):
            if index % n_round == 0:
                block.conv1 = TemporalShift(block.conv1, n_segment=n_segment, n_div=n_div)


def tsm_resnet(
    num_class: int,
    num_segments: int,
    *,
    depth: int = 50,
    modality: str = "RGB",
    is_shift: bool = True,
    shift_div: int = 8,
    new_length: int | None = None,
) -> TSN:
    """TSM's TSN(num_class, num_segments, modality, base_model=f'resnet{depth}',
    is_shift=..., shift_place='blockres'); modality 'RGB' or 'Flow' (first conv with
    2 * new_length input channels, new_length 5 by default as in ops/models.py)."""
    if modality not in ("RGB", "Flow"):
        raise ValueError(modality)
    new_length = new_length or (1 if modality == "RGB" else 5)
    base = ResNet(depth)
    if is_shift:
        make_temporal_shift(base, num_segments, n_div=shift_div)
    if modality == "Flow":  # _construct_flow_model: a new first conv, bias only if the old had
        base.conv1 = nn.Conv2d(2 * new_length, 64, 7, 2, 3, bias=False)
    return TSN(
        base, num_class, num_segments, modality, new_length, is_shift, shift_div, f"resnet{depth}"
    )


# mmaction2: mmaction/models/backbones/resnet.py, resnet_tsm.py, heads/tsn_head.py,
# tsm_head.py, recognizers/recognizer2d.py ----------------------------------------------


class ConvModule(nn.Module):
    """mmcv's ConvModule(conv_cfg Conv, norm_cfg BN2d, act ReLU or None): conv, bn, act."""

    def __init__(self, inplanes, planes, kernel_size, stride=1, padding=0, act=True):
        super().__init__()
        self.conv = nn.Conv2d(inplanes, planes, kernel_size, stride, padding, bias=False)
        self.bn = nn.BatchNorm2d(planes)
        self.activate = nn.ReLU(inplace=True) if act else None

    def forward(self, x):
        x = self.bn(self.conv(x))
        return x if self.activate is None else self.activate(x)


class MMBottleneck(nn.Module):
    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = ConvModule(inplanes, planes, 1)
        self.conv2 = ConvModule(planes, planes, 3, stride, 1)
        self.conv3 = ConvModule(planes, planes * 4, 1, act=False)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(self.conv3(self.conv2(self.conv1(x))) + identity)


class MMResNet(nn.Module):
    """mmaction2's ResNet (style 'pytorch', out_indices (3,)): the stem `conv1` a ConvModule,
    the downsample a ConvModule; ResNetTSM with is_shift wraps conv1.conv of the blocks."""

    def __init__(self, depth=50, in_channels=3, num_segments=8, is_shift=False, shift_div=8):
        super().__init__()
        self.conv1 = ConvModule(in_channels, 64, 7, 2, 3)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        inplanes = 64
        n_round = 2 if RESNET_BLOCKS[depth][2] >= 23 else 1
        for index, blocks in enumerate(RESNET_BLOCKS[depth]):
            planes, stride = 64 * 2**index, 1 if index == 0 else 2
            downsample = None
            if stride != 1 or inplanes != planes * 4:
                downsample = ConvModule(inplanes, planes * 4, 1, stride, act=False)
            layer = [MMBottleneck(inplanes, planes, stride, downsample)]
            layer += [MMBottleneck(planes * 4, planes) for _ in range(1, blocks)]
            inplanes = planes * 4
            for i, block in enumerate(layer):
                if is_shift and i % n_round == 0:
                    block.conv1.conv = MMTemporalShift(block.conv1.conv, num_segments, shift_div)
            setattr(self, f"layer{index + 1}", nn.Sequential(*layer))

    def forward(self, x):
        x = self.maxpool(self.conv1(x))
        return self.layer4(self.layer3(self.layer2(self.layer1(x))))


class TSNHead(nn.Module):
    """avg pool, AvgConsensus over the segments, dropout, fc_cls (consensus before fc)."""

    def __init__(self, num_classes, in_channels=2048, dropout_ratio=0.4):
        super().__init__()
        self.avg_pool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=dropout_ratio)
        self.fc_cls = nn.Linear(in_channels, num_classes)

    def forward(self, x, num_segs):
        x = self.avg_pool(x)
        x = x.reshape((-1, num_segs, *x.shape[1:])).mean(dim=1, keepdim=True).squeeze(1)
        return self.fc_cls(self.dropout(x).view(x.size(0), -1))


class TSMHead(nn.Module):
    """avg pool, dropout, fc_cls per frame, then AvgConsensus over `num_segments`."""

    def __init__(self, num_classes, in_channels=2048, num_segments=8, dropout_ratio=0.5):
        super().__init__()
        self.num_segments = num_segments
        self.dropout = nn.Dropout(p=dropout_ratio)
        self.fc_cls = nn.Linear(in_channels, num_classes)
        self.avg_pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x, num_segs):
        cls_score = self.fc_cls(self.dropout(torch.flatten(self.avg_pool(x), 1)))
        cls_score = cls_score.view((-1, self.num_segments, *cls_score.size()[1:]))
        return cls_score.mean(dim=1, keepdim=True).squeeze(1)


class Recognizer2D(nn.Module):
    """mmaction2's Recognizer2D: `backbone`, `cls_head` (the data preprocessor's mean / std
    buffers are not persistent: no keys)."""

    def __init__(self, backbone, cls_head, architecture, modality, num_segments, clip_len):
        super().__init__()
        self.backbone = backbone
        self.cls_head = cls_head
        self.architecture = architecture
        self.modality = modality
        self.num_segments = num_segments
        self.clip_len = clip_len

    def features(self, x):
        """Pooled per-frame features [N*T, F]: the head's avg pool of the backbone output."""
        return torch.flatten(self.cls_head.avg_pool(self.backbone(x)), 1)

    def forward(self, x, num_segs):
        return self.cls_head(self.backbone(x), num_segs)


def mmaction_recognizer(
    num_classes: int,
    num_segments: int,
    *,
    architecture: str = "tsm",
    modality: str = "rgb",
    clip_len: int = 5,
    depth: int = 50,
    shift_div: int = 8,
) -> Recognizer2D:
    """configs/_base_/models/tsm_r50.py (ResNetTSM + TSMHead) or tsn_r50.py (ResNet +
    TSNHead); modality 'flow': in_channels 2 * clip_len (tsn_..._kinetics400-flow.py)."""
    if architecture not in ("tsn", "tsm") or modality not in ("rgb", "flow"):
        raise ValueError((architecture, modality))
    clip_len = clip_len if modality == "flow" else 1
    is_tsm = architecture == "tsm"
    backbone = MMResNet(
        depth, 2 * clip_len if modality == "flow" else 3, num_segments, is_tsm, shift_div
    )
    head = TSMHead(num_classes, 2048, num_segments) if is_tsm else TSNHead(num_classes)
    return Recognizer2D(backbone, head, architecture, modality, num_segments, clip_len)
