"""The optical flow methods `actrec prepare --flow` accepts: the one list, with what each is.

Kept apart from actrec.data.format.flow (which imports OpenCV and builds each method's
estimator) so the command line can list and describe the choices without loading OpenCV.
"""

from __future__ import annotations

FLOW_METHOD_DESCRIPTIONS = {
    "dis": "DIS, OpenCV's fast preset (the default)",
    "dis-medium": "DIS, medium preset: about 2.7x lower end-point error at 1/5 the speed",
    "farneback": "Farneback's polynomial expansion",
    "tvl1": "TV-L1, the flow of the TSN papers (needs opencv-contrib-python-headless)",
}
FLOW_METHODS = tuple(FLOW_METHOD_DESCRIPTIONS)
NO_FLOW = "none"
