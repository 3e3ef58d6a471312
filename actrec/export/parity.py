"""How an export's outputs are compared with the model's when it is written (the reload
check of every format).

An absolute bound on logits does not scale: float32 kernels that sum in another order (a
TFLite or ONNX runtime's against TensorFlow's) differ by about 1e-7 of the logits' size, so a
correct 224-px model whose logits reach tens differs by more than 1e-4 where the 48-px
quickstart models stay far below it. The measure is therefore the largest difference over
the probes divided by the model's largest logit, or by 1 where the logits are smaller (so
small logits keep the absolute bound). A wrong export — one layer's weights changed — moves
the logits by a share of their size, orders of magnitude above every format's tolerance
(tests/export/test_export_parity.py)."""

from __future__ import annotations

import numpy as np

MEASURE = "max |export - model| / max(1, max |model|), over the reload check's probes"
"""What ExportSummary.difference and actrec.json's reload_check.difference measure."""


def scaled_difference(expected, reloaded) -> float:
    """max |reloaded - expected| / max(1, max |expected|) (inf when the shapes differ):
    expected / reloaded: the model's and the export's outputs for the same probe, any
    shape."""
    expected = np.asarray(expected, np.float64)
    reloaded = np.asarray(reloaded, np.float64)
    if expected.shape != reloaded.shape:
        return float("inf")
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    return float(np.max(np.abs(expected - reloaded), initial=0.0)) / scale
