"""What the name of a published file says of its model, read by its source
(actrec.published.sources: TSM's and mmaction2's files are named by their settings).

A name that says nothing (the online demo's mobilenetv2_jester_online.pth.tar) gives nothing:
the user's options and the keys fill in the rest (actrec.published.convert).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from actrec.published.sources.registry import published_sources

TSM_DENSE_INTERVAL_FRAMES = 64
"""TSM's dense sampling takes T frames every 64 // T (ops/dataset.py `_sample_indices`)."""


@dataclass(frozen=True)
class NamedSettings:
    """What a file name says; nothing where it says nothing.

    settings: recipe settings by their dotted name ("model.architecture", "data.modality",
        "data.num_segments", "data.sampling", the shift's settings, ...), as the recipe
        spells their values; a setting the name does not give is absent. Each reads as an
        attribute by its field name (`named.architecture`, None when absent).
    source: the registered source whose name it is (actrec.published.sources), or None.
    dataset: an actrec class list name; backbone_family ("resnet", "mobilenet_v2") and
    depth; non_local: a non-local TSM (which actrec does not build).
    """

    source: str | None = None
    settings: dict = field(default_factory=dict)
    dataset: str | None = None
    backbone_family: str | None = None
    depth: int | None = None
    non_local: bool = False

    def __getattr__(self, name: str):
        if name.startswith("_") or name == "settings":
            raise AttributeError(name)
        for key, value in self.settings.items():
            if key.rpartition(".")[2] == name:
                return value
        return None

    @property
    def dense(self) -> bool:
        """Whether the name says dense sampling."""
        return self.settings.get("data.sampling") == "dense"


def settings_from_file_name(name: str) -> NamedSettings:
    """What the published file name `name` (no folder) says of its model."""
    for source in published_sources():
        named = source.named_settings(name)
        if named is not None:
            return named
    return NamedSettings()
