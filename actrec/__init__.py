"""actrec: video action recognition (two-stream TSN, TSM) on Keras 3 + TensorFlow.

Importing this package must stay cheap: no TensorFlow, Keras or OpenCV at import time.
"""

__version__ = "0.1.0"
