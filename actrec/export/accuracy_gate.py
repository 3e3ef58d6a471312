"""The accuracy gate of a quantised export: the float model and the quantised model on the
same held-out clips (actrec.export.calibration), one clip at a time.

    float top-1, quantised top-1   the share of clips whose top class is the label (None
                                   where the clips have no labels of the model's classes)
    agreement                      the share of clips where both models' top class is the same
    drop                           (float top-1 - quantised top-1) in points (percent)

The export is refused (nothing written) when the drop is more than `max_drop` points; where
the clips have no labels only the agreement is measured, and nothing is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from actrec.errors import ActrecError
from actrec.export.calibration import ClipSet

DEFAULT_MAX_DROP = 2.0
"""Points of top-1 a quantised export may lose before it is refused (`--max-drop`)."""
OUTPUTS = ("logits", "probabilities")
"""The output a clip's top class is read from: the logits where the model has them (an int8
softmax holds probabilities in steps of 1/256, which ties near-even classes), else the
probabilities (a fused two-stream model)."""


@dataclass(frozen=True)
class GateResult:
    """What the gate measured (see the module); split / data_dir: where the clips came from."""

    clips: int
    split: str
    data_dir: str
    float_top1: float | None
    quantized_top1: float | None
    agreement: float
    max_drop: float

    @property
    def labelled(self) -> bool:
        return self.float_top1 is not None

    @property
    def drop(self) -> float | None:
        """Top-1 points lost (negative: gained); None without labels."""
        if not self.labelled:
            return None
        return 100.0 * (self.float_top1 - self.quantized_top1)

    @property
    def passed(self) -> bool:
        return not self.labelled or self.drop <= self.max_drop

    def entry(self) -> dict:
        """actrec.json's quantization.gate."""
        return {
            "clips": self.clips,
            "split": self.split,
            "data": self.data_dir,
            "labelled": self.labelled,
            "float_top1": self.float_top1,
            "quantized_top1": self.quantized_top1,
            "agreement": self.agreement,
            "max_drop": self.max_drop,
        }

    def summary(self, quantize: str) -> str:
        """One line: both top-1s (or that there are no labels), the agreement, the clips."""
        where = f"{self.clips} {self.split} clips of {self.data_dir}"
        if not self.labelled:
            return (
                f"{quantize}: agreement with float32 {self.agreement:.1%} on {where} (no labels "
                "of the model's classes: top-1 not measured)"
            )
        return (
            f"top-1 float32 {self.float_top1:.1%}, {quantize} {self.quantized_top1:.1%} "
            f"(drop {self.drop:.1f} points, --max-drop {self.max_drop:g}), agreement "
            f"{self.agreement:.1%} on {where}"
        )


def top_class(outputs: dict) -> int:
    """The top class of one clip's outputs by name (batch 1; OUTPUTS)."""
    name = next(name for name in OUTPUTS if name in outputs)
    return int(np.argmax(np.asarray(outputs[name])[0]))


def top_classes(run: Callable[[dict], dict], clips: ClipSet) -> np.ndarray:
    """int [N]: the top class of each clip, `run`(inputs by name, batch 1) -> outputs by name."""
    return np.array([top_class(run(clips.clip(i))) for i in range(clips.count)])


def measured_gate(float_run, quantized_run, clips: ClipSet, max_drop: float) -> GateResult:
    """The gate's figures of `quantized_run` against `float_run` on `clips`."""
    expected, quantized = top_classes(float_run, clips), top_classes(quantized_run, clips)
    labelled = clips.labelled
    return GateResult(
        clips=clips.count,
        split=clips.split,
        data_dir=str(clips.data_dir),
        float_top1=float(np.mean(expected == clips.labels)) if labelled else None,
        quantized_top1=float(np.mean(quantized == clips.labels)) if labelled else None,
        agreement=float(np.mean(expected == quantized)),
        max_drop=float(max_drop),
    )


def check_gate(result: GateResult, quantize: str, out_dir) -> None:
    """ActrecError with both figures when `result` loses more than its max_drop."""
    if not result.passed:
        raise ActrecError(
            f"the {quantize} export loses too much accuracy: {result.summary(quantize)}; "
            f"nothing was written to {out_dir}. Export with another --quantize, calibrate on "
            "more clips (--calibration-clips), or allow the drop with a larger --max-drop"
        )
