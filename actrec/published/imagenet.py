"""A PyTorch ImageNet file installed as the ImageNet start of a PyTorch-layout backbone.

torchvision's ResNet files and TSM's MobileNetV2 file are checked against the SHA-256 prefix
their names carry (torch.hub's convention), then converted once, at installation, into the
Keras weight file the store keeps (`{backbone}_notop.weights.h5`): training from
`model.weights: imagenet` then needs no torch. The classifier (ImageNet's `fc`) is left out.

`fetch_weights` and `import_weights` install any backbone's file into the store
(actrec.models.weight_install's), a PyTorch file converted here: `actrec pretrained fetch /
import` call them.
"""

from __future__ import annotations

from pathlib import Path

from actrec.config.backbones import BackboneSpec
from actrec.errors import WeightsError
from actrec.models import weight_install
from actrec.progress import Progress


def fetch_weights(
    backbone: str,
    url: str | None = None,
    directory: Path | None = None,
    expected_sha256: str | None = None,
    progress: Progress | None = None,
) -> Path:
    """actrec.models.weight_install.fetch_weights, a PyTorch file converted on installation."""
    return weight_install.fetch_weights(
        backbone, url, directory, expected_sha256, progress, convert=convert_imagenet_file
    )


def import_weights(
    file: Path | str,
    backbone: str | None = None,
    directory: Path | None = None,
    expected_sha256: str | None = None,
) -> Path:
    """actrec.models.weight_install.import_weights, a PyTorch file converted on installation."""
    return weight_install.import_weights(
        file, backbone, directory, expected_sha256, convert=convert_imagenet_file
    )


def convert_imagenet_file(source: Path, spec: BackboneSpec, destination: Path) -> None:
    """Writes `spec`'s no-top backbone with the weights of the PyTorch ImageNet file
    `source` to `destination` (a name ending in .weights.h5); WeightsError when the file is
    not that network."""
    from actrec.models.backbones import build_plain_backbone
    from actrec.published.layouts import published_network
    from actrec.published.torch_files import read_torch_checkpoint
    from actrec.published.weights import set_published_backbone_weights

    network = published_network(read_torch_checkpoint(source).state_dict)
    if network.backbone != spec.name:
        raise WeightsError(
            f"{source} holds a {network.backbone}, not {spec.name}'s ImageNet weights; give "
            f"{spec.weights.source_file_name} ({spec.weights.url})"
        )
    size = spec.default_input_size
    backbone = build_plain_backbone(spec.name, (size, size, 3))
    set_published_backbone_weights(backbone, network, str(source))
    backbone.save_weights(str(destination))
