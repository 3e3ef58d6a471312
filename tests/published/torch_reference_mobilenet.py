"""PyTorch MobileNetV2 references (see torch_reference): TSM's archs/mobilenet_v2.py (its
ImageNet network, and TSM's TSN / TSM on it, ops/models.py) and the online demo's
online_demo/mobilenet_v2_tsm.py, whose forward carries the shift buffers frame to frame."""

from __future__ import annotations

import torch
from torch import nn
from torch_reference_resnet import TSN, TemporalShift

# t, c, n, s (both files)
SETTING = [
    [1, 16, 1, 1],
    [6, 24, 2, 2],
    [6, 32, 3, 2],
    [6, 64, 4, 2],
    [6, 96, 3, 1],
    [6, 160, 3, 2],
    [6, 320, 1, 1],
]
ONLINE_SHIFT_BLOCKS = (2, 4, 5, 7, 8, 9, 11, 12, 14, 15)
"""online_demo/mobilenet_v2_tsm.py shift_block_idx: the inverted residual blocks (0-16;
features index + 1) that shift: those with a residual connection and expand ratio 6."""


def conv_bn(inp, oup, stride):
    return nn.Sequential(
        nn.Conv2d(inp, oup, 3, stride, 1, bias=False), nn.BatchNorm2d(oup), nn.ReLU6(inplace=True)
    )


def conv_1x1_bn(inp, oup):
    return nn.Sequential(
        nn.Conv2d(inp, oup, 1, 1, 0, bias=False), nn.BatchNorm2d(oup), nn.ReLU6(inplace=True)
    )


def _inverted_residual_layers(inp, oup, stride, expand_ratio):
    hidden = int(inp * expand_ratio)
    layers = []
    if expand_ratio != 1:  # pw
        layers += [nn.Conv2d(inp, hidden, 1, 1, 0, bias=False), nn.BatchNorm2d(hidden)]
        layers += [nn.ReLU6(inplace=True)]
    layers += [nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False)]  # dw
    layers += [nn.BatchNorm2d(hidden), nn.ReLU6(inplace=True)]
    layers += [nn.Conv2d(hidden, oup, 1, 1, 0, bias=False), nn.BatchNorm2d(oup)]  # pw-linear
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expand_ratio):
        super().__init__()
        self.stride = stride
        self.use_res_connect = stride == 1 and inp == oup
        self.conv = _inverted_residual_layers(inp, oup, stride, expand_ratio)

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class InvertedResidualWithShift(InvertedResidual):
    """The online block: the input's first c // 8 channels replaced by the previous frame's
    (`shift_buffer`); returns (x + conv(shifted x), this frame's first c // 8 channels)."""

    def forward(self, x, shift_buffer):
        c = x.size(1)
        x1, x2 = x[:, : c // 8], x[:, c // 8 :]
        return x + self.conv(torch.cat((shift_buffer, x2), dim=1)), x1


def _blocks(online: bool):
    features, input_channel, index = [conv_bn(3, 32, 2)], 32, 0
    for t, c, n, s in SETTING:
        for i in range(n):
            shift = online and index in ONLINE_SHIFT_BLOCKS
            block = InvertedResidualWithShift if shift else InvertedResidual
            features.append(block(input_channel, c, s if i == 0 else 1, expand_ratio=t))
            input_channel, index = c, index + 1
    return [*features, conv_1x1_bn(input_channel, 1280)]


class MobileNetV2(nn.Module):
    """archs/mobilenet_v2.py MobileNetV2 (width 1): `features` (Sequential), `classifier`."""

    def __init__(self, n_class=1000):
        super().__init__()
        self.features = nn.Sequential(*_blocks(online=False))
        self.classifier = nn.Linear(1280, n_class)

    def forward(self, x):
        return self.classifier(self.features(x).mean(3).mean(2))


def mobilenet_v2(n_class: int = 1000) -> MobileNetV2:
    """TSM's ImageNet MobileNetV2 (mobilenetv2_1.0-f2a8633.pth.tar's keys)."""
    return MobileNetV2(n_class)


def tsm_mobilenet_v2(
    num_class: int, num_segments: int, *, is_shift: bool = True, shift_div: int = 8
) -> TSN:
    """TSM's TSN(num_class, num_segments, 'RGB', base_model='mobilenetv2', is_shift=...):
    a TemporalShift on conv[0] of each InvertedResidual with len(conv) == 8 and a residual
    connection (ops/models.py _prepare_base_model)."""
    base = MobileNetV2()
    if is_shift:
        for m in base.modules():
            if isinstance(m, InvertedResidual) and len(m.conv) == 8 and m.use_res_connect:
                m.conv[0] = TemporalShift(m.conv[0], n_segment=num_segments, n_div=shift_div)
    return TSN(base, num_class, num_segments, "RGB", 1, is_shift, shift_div, "mobilenetv2")


class OnlineMobileNetV2(nn.Module):
    """online_demo/mobilenet_v2_tsm.py MobileNetV2: `features` (ModuleList), `classifier`;
    forward(x, *shift_buffer) -> (logits, *new shift buffers), one frame at a time."""

    def __init__(self, n_class=27):
        super().__init__()
        self.features = nn.ModuleList(_blocks(online=True))
        self.classifier = nn.Linear(1280, n_class)
        self.modality = "RGB"

    def forward(self, x, *shift_buffer):
        shift_buffer_idx, out_buffer = 0, []
        for f in self.features:
            if isinstance(f, InvertedResidualWithShift):
                x, s = f(x, shift_buffer[shift_buffer_idx])
                shift_buffer_idx += 1
                out_buffer.append(s)
            else:
                x = f(x)
        return (self.classifier(x.mean(3).mean(2)), *out_buffer)

    def zero_buffers(self, x):
        """The demo's initial buffers (zeros, as its export inputs) for frames like `x`."""
        buffers = []
        for f in self.features:
            if isinstance(f, InvertedResidualWithShift):
                buffers.append(torch.zeros_like(x[:, : x.size(1) // 8]))
                x = f(x, buffers[-1])[0]
            else:
                x = f(x)
        return buffers

    @torch.no_grad()
    def step_frames(self, x):
        """Normalised frames [T, 3, H, W] of one stream through forward one at a time,
        the buffers carried: per-frame logits [T, K]."""
        buffers, logits = self.zero_buffers(x[:1]), []
        for frame in x:
            out, *buffers = self(frame[None], *buffers)
            logits.append(out[0])
        return torch.stack(logits)

    def clip_features(self, x):
        """The same computation over a whole clip [T, 3, H, W] at once (the online shift:
        frame t's first c // 8 channels from frame t - 1, zeros at t = 0): features [T, F]."""
        for f in self.features:
            if isinstance(f, InvertedResidualWithShift):
                fold = x.size(1) // 8
                past = torch.cat((torch.zeros_like(x[:1, :fold]), x[:-1, :fold]), 0)
                x = x + f.conv(torch.cat((past, x[:, fold:]), 1))
            else:
                x = f(x)
        return x.mean(3).mean(2)


def online_mobilenet_v2(n_class: int = 27) -> OnlineMobileNetV2:
    """The online demo's network (mobilenetv2_jester_online.pth.tar: 27 Jester classes)."""
    return OnlineMobileNetV2(n_class)
