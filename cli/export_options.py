"""`actrec export`'s quantisation options: calibration data and the accuracy gate
(actrec.export.quantization.quantized_export)."""

from __future__ import annotations

from pathlib import Path

import click

from actrec.export.quantization.accuracy_gate import DEFAULT_CONFIDENCE, DEFAULT_MAX_DROP
from actrec.export.quantization.calibration import DEFAULT_CALIBRATION_CLIPS, DEFAULT_GATE_CLIPS
from actrec.export.quantization.quantized_export import QuantizationOptions

QUANTIZATION_PARAMETERS = (
    "calibration_clips",
    "calibration_data",
    "gate_clips",
    "max_drop",
    "gate_confidence",
    "integer_io",
)


def quantization_options(command):
    """Add --calibration-clips, --calibration-data, --gate-clips, --max-drop,
    --gate-confidence and --integer-io to `command`."""
    options = [
        click.option(
            "--calibration-clips",
            type=click.IntRange(min=1),
            default=DEFAULT_CALIBRATION_CLIPS,
            show_default=True,
            help="--quantize int8: training clips of the run's data its activation ranges "
            "are calibrated on.",
        ),
        click.option(
            "--calibration-data",
            type=click.Path(path_type=Path),
            help="A prepared folder to calibrate (int8) and gate the quantised model on, for "
            "a run without its data (a converted model): its train clips calibrate, its val "
            "or test clips (else train) gate.",
        ),
        click.option(
            "--gate-clips",
            type=click.IntRange(min=1),
            default=DEFAULT_GATE_CLIPS,
            show_default=True,
            help="Held-out clips (val, else test) the float and the quantised model are "
            "compared on (every --quantize).",
        ),
        click.option(
            "--max-drop",
            type=float,
            default=DEFAULT_MAX_DROP,
            show_default=True,
            help="Top-1 points a quantised export may lose on the gate clips: it is refused "
            "(nothing written) when its loss beyond them holds at --gate-confidence.",
        ),
        click.option(
            "--gate-confidence",
            type=click.FloatRange(min=0, max=1, max_open=True),
            default=DEFAULT_CONFIDENCE,
            show_default=True,
            help="The confidence of the drop's interval on the paired gate clips: refused "
            "when all of it is above --max-drop (0: on the measured drop alone, which a clip "
            "or two near a class boundary decides).",
        ),
        click.option(
            "--integer-io",
            is_flag=True,
            help="--quantize int8 --format tflite: uint8 input (the 0-255 pixels) and int8 "
            "output, for devices that take integers only (default: float32 in and out).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def quantization_settings(values: dict):
    """actrec.export.quantization.quantized_export.QuantizationOptions of the options' values
    (popped from `values`)."""
    return QuantizationOptions(**{name: values.pop(name) for name in QUANTIZATION_PARAMETERS})
