"""torchvision's ResNet in the registry: its ImageNet V1 weights, which TSM's and mmaction2's
published models started from (76.1 % ImageNet top-1; keras.applications' ResNet-50: 74.9 %;
torchvision/models/resnet.py, ResNet50_Weights.IMAGENET1K_V1 / ResNet101's). Their file
names end in the first hex digits of their SHA-256 (torch.hub's convention:
"resnet50-0676ba61.pth"); the store keeps their conversion to Keras weights. Standard
library only."""

from __future__ import annotations

from actrec.backbones.resnet_torchvision.layout import TORCHVISION_RESNET_LAYOUT
from actrec.backbones.spec import TORCHVISION_URL, BackboneFamily, BackboneSpec
from actrec.backbones.torch_files import pytorch_weights_file


def _torchvision_resnet(depth: int, file_name: str) -> BackboneSpec:
    name = f"resnet{depth}_torchvision"
    return BackboneSpec(
        name=name,
        family="resnet_torchvision",
        constructor=name,
        default_input_size=224,
        preprocessing="tsm",
        feature_width=2048,
        weights=pytorch_weights_file(name, f"{TORCHVISION_URL}{file_name}"),
        shift_family="resnet",  # Keras's ResNet layer names: actrec.backbones.resnet.shift
        layout="pytorch",
    )


FAMILY = BackboneFamily(
    name="resnet_torchvision",
    position=8,
    specs=(
        _torchvision_resnet(50, "resnet50-0676ba61.pth"),
        _torchvision_resnet(101, "resnet101-63fe2227.pth"),
    ),
    published_layout=TORCHVISION_RESNET_LAYOUT,
)
