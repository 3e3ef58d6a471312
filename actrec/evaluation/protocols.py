"""Named test protocols: how many segments, clips and crops each video is seen with.

`PROTOCOLS` is the one list: `actrec eval --protocol` offers its names and prints their
descriptions, the tests run over it, and docs/evaluation-and-export.md shows it. "centre"
(the recipe's segments, 1 clip, centre crop) is what `actrec train` validates with.

Views are averaged as logits (the official TSN / TSM evaluation) or as softmax scores
(actrec.evaluation.scores). A model trained with T segments is evaluated with the
protocol's T by rebuilding it (the weights do not depend on T); TSM's temporal shift works
for any T.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from actrec.errors import ConfigError


@dataclass(frozen=True)
class Protocol:
    """num_segments None: the recipe's own."""

    name: str
    num_segments: int | None
    num_clips: int
    num_crops: int
    description: str

    @property
    def num_views(self) -> int:
        return self.num_clips * self.num_crops


PROTOCOLS = {
    protocol.name: protocol
    for protocol in (
        Protocol("centre", None, 1, 1, "the recipe's segments, 1 clip, centre crop"),
        Protocol("tsn-25x10", 25, 1, 10, "TSN: 25 segments x 10 crops (corners, centre, mirrors)"),
        Protocol("tsm-8x1", 8, 1, 1, "TSM: 8 segments, 1 clip, centre crop"),
        Protocol("tsm-8x3", 8, 1, 3, "TSM: 8 segments, 1 clip, 3 crops along the long side"),
        Protocol("tsm-8x10", 8, 10, 3, "TSM (Kinetics): 8 segments, 10 clips x 3 crops"),
    )
}
DEFAULT_PROTOCOL = "centre"


def resolve_protocol(
    name: str,
    num_segments: int | None = None,
    num_clips: int | None = None,
    num_crops: int | None = None,
) -> Protocol:
    """The protocol `name`, with any of its numbers overridden (the name then records it)."""
    if name not in PROTOCOLS:
        raise ConfigError(
            f"unknown protocol {name!r}; choose one of: {', '.join(PROTOCOLS)} "
            "(`actrec eval --help` describes them)"
        )
    protocol = PROTOCOLS[name]
    changes = {
        key: value
        for key, value in (
            ("num_segments", num_segments),
            ("num_clips", num_clips),
            ("num_crops", num_crops),
        )
        if value is not None and value != getattr(protocol, key)
    }
    for key, value in changes.items():
        if not isinstance(value, int) or value < 1:
            raise ConfigError(f"{key}={value!r} is not valid; use a whole number >= 1")
    if not changes:
        return protocol
    suffix = "-".join(f"{key.removeprefix('num_')}{value}" for key, value in changes.items())
    return replace(protocol, name=f"{protocol.name}-{suffix}", **changes)
