"""A PyTorch ImageNet file installed as the ImageNet start of a PyTorch-layout backbone.

torchvision's ResNet files and TSM's MobileNetV2 file are checked against the SHA-256 prefix
their names carry (torch.hub's convention), then converted once, at installation, into the
Keras weight file the store keeps (`{backbone}_notop.weights.h5`): training from
`model.weights: imagenet` then needs no torch. The classifier (ImageNet's `fc`) is left out.

actrec.backbones.weight_install's `fetch_weights` and `import_weights` install any
backbone's file into the store; `actrec pretrained fetch / import` hand them
`convert=convert_imagenet_file`.
"""

from __future__ import annotations

from pathlib import Path

from actrec.backbones.spec import BackboneSpec
from actrec.errors import WeightsError
from actrec.published.layouts import published_network
from actrec.published.torch_files import read_torch_checkpoint


def convert_imagenet_file(source: Path, spec: BackboneSpec, destination: Path) -> None:
    """Writes `spec`'s no-top backbone with the weights of the PyTorch ImageNet file
    `source` to `destination` (a name ending in .weights.h5); WeightsError when the file is
    not that network."""
    # Keras only when a PyTorch file is converted: installing a Keras file (`actrec
    # pretrained fetch mobilenet_v2`) does not import it.
    from actrec.backbones.build import build_plain_backbone
    from actrec.published.weights import set_published_backbone_weights

    network = published_network(read_torch_checkpoint(source).state_dict)
    if network.backbone != spec.name:
        raise WeightsError(
            f"{source} holds a {network.backbone}, not {spec.name}'s ImageNet weights; give "
            f"{spec.weights.source_file_name} ({spec.weights.url})"
        )
    size = spec.default_input_size
    backbone = build_plain_backbone(spec, (size, size, 3))
    set_published_backbone_weights(backbone, network, str(source))
    backbone.save_weights(str(destination))
