"""The crop layouts of multi-view evaluation: the one list of crop counts and what each is.

actrec.data.input.views cuts them; `actrec eval --crops` and the protocols
(actrec.evaluation.protocols) offer them. Imports nothing, so the command line can list them
without TensorFlow.
"""

from __future__ import annotations

CROP_LAYOUTS = {
    1: "centre",
    3: "3 along the long side",
    10: "4 corners + centre, and their mirror images",
}
CROP_COUNTS = tuple(CROP_LAYOUTS)


def crop_layouts_text() -> str:
    """ "1 (centre), 3 (...) or 10 (...)", for messages and help."""
    parts = [f"{count} ({text})" for count, text in CROP_LAYOUTS.items()]
    return ", ".join(parts[:-1]) + " or " + parts[-1]
