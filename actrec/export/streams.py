"""One stream of an export: its evaluation clip, its trained model and the run it comes from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import keras

    from actrec.data.input.clip_spec import ClipSpec
    from actrec.runs.trained import TrainedRun

INPUT_OF_MODALITY = {"rgb": "frames", "flow": "flow"}
"""The input name of each modality, in every format's signature."""


@dataclass(frozen=True)
class ExportedStream:
    """spec: the evaluation ClipSpec; model: the trained keras model (clips [B, T, crop,
    crop, C] in the stored 0-255 scale -> logits [B, K]); run: the run it was trained in
    (None for a model that is served without one, as in tests)."""

    spec: ClipSpec
    model: keras.Model | None = None
    run: TrainedRun | None = None

    @property
    def modality(self) -> str:
        return self.spec.modality

    @property
    def input_name(self) -> str:
        return INPUT_OF_MODALITY[self.spec.modality]
