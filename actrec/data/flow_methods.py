"""The names of the optical flow methods `actrec prepare --flow` accepts.

Kept apart from actrec.data.flow (which imports OpenCV) so the command line can list the
choices without loading OpenCV.
"""

from __future__ import annotations

# "dis" is DIS with OpenCV's FAST preset (the default); "dis-medium" the MEDIUM preset.
FLOW_METHODS = ("dis", "dis-medium", "farneback", "tvl1")
NO_FLOW = "none"
