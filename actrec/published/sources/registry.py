"""The published-source registry: the only list of the places published PyTorch video and
ImageNet models come from.

Each source is one module of this package that defines `SOURCE`, a PublishedSource: how its
state dicts are recognised (`claims`), its module names in actrec's spelling (`module_name`:
actrec.backbones.published_layout then maps them to Keras layers by backbone family), what its
file names say (`named_settings`), where its files are downloaded (`download_hint`), its
input normalisation (`preprocessing`, a model.preprocessing mode), the backbone each of its
network families loads into (`backbones`), the defaults of a file that says nothing
(`defaults`) and its section of docs/model-zoo.md (`docs_section`). `pretrained convert`,
`pretrained fetch / import` (the network and backbone of a file, the refusal of video
models) and the model zoo's page read this registry; adding a source is one module here, its
reference-network test (tests/published/) and its row in docs/model-zoo.md
(docs/extending.md).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import actrec.published.sources as sources
from actrec.errors import WeightsError

IMAGENET_CLASSES = 1000
TORCHVISION_RESNET = "resnet{depth}_torchvision"
TSM_MOBILENET_V2 = "mobilenet_v2_tsm"
"""The backbones (actrec.backbones.registry) published files load into: torchvision's ResNet
of the file's depth, TSM's MobileNetV2."""


def _nothing(_: str) -> None:
    return None


def _no_defaults(_: Any) -> dict:
    return {}


@dataclass(frozen=True)
class PublishedSource:
    """One place published PyTorch models come from.

    name: the layout recorded in a converted run's run.json ("tsm", "mmaction2", ...).
    title: how messages and docs call it.
    claims(keys) -> whether a state dict whose keys are `keys` (DataParallel's `module.`
        removed) is this source's.
    key_form: its keys in a few words, for the message listing what actrec converts.
    module_name(module) -> `module` (this source's path, shift wrappers' `.net` removed) in
        actrec's spelling (torchvision's ResNet names or TSM's MobileNetV2 names).
    backbones: {network family (actrec.backbones.registry.PUBLISHED_LAYOUTS): the registered
        backbone its files load into, `{depth}` standing for a ResNet's depth}.
    docs_section: the heading of its section of docs/model-zoo.md (its files, the command).
    named_settings(file_name) -> what the file name says (a NamedSettings), None when the
        name is not one of this source's.
    download_hint(file_name) -> where to download the published file, None when not one of
        this source's.
    preprocessing: the model.preprocessing of its converted runs (how it normalised input).
    defaults(network) -> {setting: value} where the file says nothing (architecture,
        shift_direction, dataset: a class list).
    imagenet_classifiers: whether a 1000-class file of this source is an ImageNet
        classifier (a backbone's weights, for `pretrained import` or `--init-from`).
    """

    name: str
    title: str
    claims: Callable[[Sequence[str]], bool]
    key_form: str
    module_name: Callable[[str], str]
    backbones: Mapping[str, str]
    docs_section: str
    preprocessing: str = "tsm"
    named_settings: Callable[[str], Any] = _nothing  # a NamedSettings or None
    download_hint: Callable[[str], str | None] = _nothing
    defaults: Callable[[Any], dict] = field(default=_no_defaults)  # of a PublishedNetwork
    imagenet_classifiers: bool = False

    def backbone(self, family: str, depth: int | None = None) -> str:
        """The backbone a network of `family` (and `depth`) of this source loads into;
        WeightsError for a family its files are not converted from."""
        if family not in self.backbones:
            raise WeightsError(
                f"a {family} network in {self.title} layout: actrec converts its "
                f"{' and '.join(self.backbones)} networks"
            )
        return self.backbones[family].format(depth=depth)


def published_sources() -> tuple[PublishedSource, ...]:
    """Every registered source (every module of this package but the registry), by module
    name. Their `claims` exclude each other (tests/published/test_published_sources.py), so
    the order does not decide a state dict's source."""
    modules = sorted(
        module.name
        for module in pkgutil.iter_modules(sources.__path__)
        if module.name != "registry"
    )
    return tuple(
        importlib.import_module(f"actrec.published.sources.{module}").SOURCE for module in modules
    )


def source_named(name: str) -> PublishedSource:
    """The registered source whose name (run.json's layout) is `name`."""
    for source in published_sources():
        if source.name == name:
            return source
    raise WeightsError(f"no published source is named {name!r}")


def source_of_keys(keys: Sequence[str]) -> PublishedSource:
    """The source whose state dicts have `keys`; WeightsError listing what actrec converts
    when none claims them."""
    for source in published_sources():
        if source.claims(keys):
            return source
    sample = ", ".join(sorted(keys)[:4])
    forms = ", ".join(f"{source.title} ({source.key_form})" for source in published_sources())
    raise WeightsError(
        f"the state dict ({len(keys)} tensors; first keys: {sample}) is none of the layouts "
        f"actrec converts: {forms}; docs/model-zoo.md lists the files"
    )


def strip_prefix(key: str, prefix: str) -> str:
    """`key` without `prefix` where it starts with it."""
    return key[len(prefix) :] if key.startswith(prefix) else key
