"""actrec: video action recognition (two-stream TSN, TSM) on Keras 3 + TensorFlow.

Importing this package must stay cheap: no TensorFlow, Keras or OpenCV at import time.
"""

import os as _os
import platform as _platform

__version__ = "0.1.0"

# TensorFlow turns its oneDNN kernels on by default only on x86 CPUs with AVX512-VNNI,
# AVX-VNNI or AMX (Intel Cascade Lake and newer); on the others (AMD EPYC before Zen 4, most
# laptops) it runs Eigen kernels, which train actrec's models about 2x slower than oneDNN
# limited to AVX2 (`python benchmarks/onednn.py`: 1.95x per step; docs/benchmarks.md).
# oneDNN runs on any x86-64 CPU, so actrec turns it on wherever the user has not chosen:
# TF_ENABLE_ONEDNN_OPTS=0 restores TensorFlow's default. It must be set before TensorFlow
# is imported, which every actrec module that uses TensorFlow imports after this package.
if _platform.machine().lower() in ("x86_64", "amd64"):
    _os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
