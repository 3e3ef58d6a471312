"""The accuracy gate of a quantised export: the float model and the quantised model on the
same held-out clips (actrec.export.quantization.calibration), one clip at a time.

    float top-1, quantised top-1   the share of clips whose top class is the label (None
                                   where the clips have no labels of the model's classes)
    agreement                      the share of clips where both models' top class is the same
    lost, gained                   labelled clips right under float32 and wrong quantised,
                                   and the other way round
    drop                           (float top-1 - quantised top-1) in points (percent):
                                   (lost - gained) / clips, with its interval at `confidence`
                                   (actrec.evaluation.paired_difference: paired clips)

One clip of N is 100 / N points: on 56 clips two clips that change their top class are a
drop of 3.6 points, which says little about the quantisation. The export is refused
(nothing written) when the loss beyond `max_drop` is real at the gate's confidence: when
the drop's whole interval, its lower bound, is above `max_drop` points. A measured drop
above `max_drop` that the clips cannot tell from `max_drop` passes, and the summary asks
for more clips. Where the
clips have no labels only the agreement is measured, and nothing is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from actrec.errors import ActrecError
from actrec.evaluation.paired_difference import PairedDifference, paired_difference
from actrec.export.quantization.calibration import ClipSet

DEFAULT_MAX_DROP = 2.0
"""Points of top-1 a quantised export may lose before it is refused (`--max-drop`)."""
DEFAULT_CONFIDENCE = 0.95
"""`--gate-confidence`: the drop's interval; an export is refused when all of it is above
--max-drop (its lower bound, wrong 2.5 % of the time at 0.95). 0 refuses on the measured
drop alone. On the documented int8 exports (2 % of clips lost, 1 % gained: a drop of about
1 point), a one-sided 95 % bound refused 1.4 % of the exports and this one 0.05 %
(docs/benchmarks.md): a suite that runs three of them must not fail on one in 25 runs."""
OUTPUTS = ("logits", "probabilities")
"""The output a clip's top class is read from: the logits where the model has them (an int8
softmax holds probabilities in steps of 1/256, which ties near-even classes), else the
probabilities (a fused two-stream model)."""
VERDICTS = ("passed", "undecided", "refused", "unlabelled")
"""passed: the measured drop is within --max-drop; undecided: it is above, but the clips
cannot tell it from --max-drop at the confidence (passed, more clips asked for); refused:
the loss beyond --max-drop holds at the confidence; unlabelled: agreement only."""


@dataclass(frozen=True)
class GateResult:
    """What the gate measured (see the module); split / data_dir: where the clips came from;
    difference: the paired drop with its bounds (None without labels)."""

    clips: int
    split: str
    data_dir: str
    float_top1: float | None
    quantized_top1: float | None
    agreement: float
    max_drop: float
    difference: PairedDifference | None = None

    @property
    def labelled(self) -> bool:
        return self.difference is not None

    @property
    def drop(self) -> float | None:
        """Top-1 points lost (negative: gained); None without labels."""
        return None if self.difference is None else 100.0 * self.difference.drop

    @property
    def verdict(self) -> str:
        """One of VERDICTS."""
        if self.difference is None:
            return "unlabelled"
        if 100.0 * self.difference.lower > self.max_drop:
            return "refused"
        return "undecided" if self.drop > self.max_drop else "passed"

    @property
    def passed(self) -> bool:
        return self.verdict != "refused"

    @property
    def changed(self) -> int:
        """Clips whose top class differs between the two models."""
        return round(self.clips * (1.0 - self.agreement))

    def entry(self) -> dict:
        """actrec.json's quantization.gate."""
        entry = {
            "clips": self.clips,
            "split": self.split,
            "data": self.data_dir,
            "labelled": self.labelled,
            "float_top1": self.float_top1,
            "quantized_top1": self.quantized_top1,
            "agreement": self.agreement,
            "changed": self.changed,
            "max_drop": self.max_drop,
            "verdict": self.verdict,
        }
        if self.difference is not None:
            entry.update(
                lost=self.difference.lost,
                gained=self.difference.gained,
                confidence=self.difference.confidence,
                drop=self.drop,
                drop_lower=100.0 * self.difference.lower,
                drop_upper=100.0 * self.difference.upper,
            )
        return entry

    def summary(self, quantize: str) -> str:
        """One line: both top-1s (or that there are no labels), the changed clips, the drop
        with its interval and the verdict."""
        where = f"{self.clips} {self.split} clips of {self.data_dir}"
        if self.difference is None:
            return (
                f"{quantize}: agreement with float32 {self.agreement:.1%} on {where} (no labels "
                "of the model's classes: top-1 not measured)"
            )
        return (
            f"top-1 float32 {self.float_top1:.1%}, {quantize} {self.quantized_top1:.1%}, "
            f"agreement {self.agreement:.1%} on {where}; {gate_reading(self.entry())}"
        )


def gate_reading(gate: dict) -> str:
    """What a labelled gate entry (GateResult.entry) decided, in words: the changed clips,
    the drop with its interval, one clip's worth and the verdict (the export's summary and
    its model card say the same)."""
    clips, confidence = gate["clips"], gate["confidence"]
    text = (
        f"{gate['changed']} clips changed their top class ({gate['lost']} lost, "
        f"{gate['gained']} gained): drop {gate['drop']:.1f} points, {confidence:.0%} "
        f"interval {gate['drop_lower']:.1f} to {gate['drop_upper']:.1f} (one clip is "
        f"{100 / clips:.1f} points); --max-drop {gate['max_drop']:g}: "
    )
    if gate["verdict"] == "refused" and confidence == 0:
        return text + "refused on the measured drop alone (--gate-confidence 0)"
    if gate["verdict"] == "refused":
        return text + (
            f"the loss beyond {gate['max_drop']:g} points holds at {confidence:.0%} confidence "
            "(the whole interval is above it)"
        )
    if gate["verdict"] == "undecided":
        return text + (
            f"passed, as {clips} clips cannot tell this drop from {gate['max_drop']:g} points "
            f"at {confidence:.0%} confidence; to decide, gate on more clips (--gate-clips, or "
            "--calibration-data PREPARED with a larger val or test split)"
        )
    return text + "passed"


def top_class(outputs: dict) -> int:
    """The top class of one clip's outputs by name (batch 1; OUTPUTS)."""
    name = next(name for name in OUTPUTS if name in outputs)
    return int(np.argmax(np.asarray(outputs[name])[0]))


def top_classes(run: Callable[[dict], dict], clips: ClipSet) -> np.ndarray:
    """int [N]: the top class of each clip, `run`(inputs by name, batch 1) -> outputs by name."""
    return np.array([top_class(run(clips.clip(i))) for i in range(clips.count)])


def gate_of_classes(
    expected: np.ndarray,
    quantized: np.ndarray,
    clips: ClipSet,
    max_drop: float,
    confidence: float = DEFAULT_CONFIDENCE,
) -> GateResult:
    """The gate's figures of the top classes int [N] of the float (`expected`) and the
    quantised model on `clips`."""
    difference = float_top1 = quantized_top1 = None
    if clips.labelled:
        float_right, quantized_right = expected == clips.labels, quantized == clips.labels
        float_top1, quantized_top1 = float(np.mean(float_right)), float(np.mean(quantized_right))
        difference = paired_difference(
            lost=int(np.sum(float_right & ~quantized_right)),
            gained=int(np.sum(~float_right & quantized_right)),
            clips=clips.count,
            confidence=confidence,
        )
    return GateResult(
        clips=clips.count,
        split=clips.split,
        data_dir=str(clips.data_dir),
        float_top1=float_top1,
        quantized_top1=quantized_top1,
        agreement=float(np.mean(expected == quantized)),
        max_drop=float(max_drop),
        difference=difference,
    )


def measured_gate(
    float_run, quantized_run, clips: ClipSet, max_drop: float, confidence=DEFAULT_CONFIDENCE
) -> GateResult:
    """The gate's figures of `quantized_run` against `float_run` on `clips`."""
    expected, quantized = top_classes(float_run, clips), top_classes(quantized_run, clips)
    return gate_of_classes(expected, quantized, clips, max_drop, confidence)


def check_gate(result: GateResult, quantize: str, out_dir) -> None:
    """ActrecError with the gate's figures when `result` is refused."""
    if not result.passed:
        raise ActrecError(
            f"the {quantize} export loses too much accuracy: {result.summary(quantize)}; "
            f"nothing was written to {out_dir}. Export with another --quantize, calibrate on "
            "more clips (--calibration-clips), or allow the drop with a larger --max-drop"
        )
