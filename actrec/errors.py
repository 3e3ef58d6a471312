"""Errors a user can act on.

Every message names the file or value at fault and what to do about it; the CLI prints
the message without a traceback and exits non-zero.
"""

from __future__ import annotations

from pathlib import Path


class ActrecError(Exception):
    """Base class of every error whose message is meant for the user."""


class DatasetError(ActrecError):
    """A dataset root, its annotations or its videos are not usable as given."""


class AnnotationError(DatasetError):
    """A line of an annotation file (split list, CSV) does not have the expected form."""

    def __init__(self, path: Path | str, line_number: int, line: str, expected: str):
        self.path = Path(path)
        self.line_number = line_number
        self.line = line
        self.expected = expected
        shown = line.rstrip("\r\n")
        if len(shown) > 120:
            shown = shown[:117] + "..."
        super().__init__(
            f"{self.path}:{line_number}: malformed line {shown!r}; expected {expected}. "
            "Fix or remove this line (or point --annotations at the official files)."
        )


class OutputError(ActrecError):
    """An output path cannot be written (it is a file, it holds other data, ...)."""


class ConfigError(ActrecError):
    """An option or recipe value is invalid."""


class VideoReadError(ActrecError):
    """A video cannot be used; `reason` is a short machine-readable code for reports.

    Reasons: "missing", "empty-file", "undecodable", "too-short", "frame-gap" (a frame
    folder with a gap in its numbering).
    """

    def __init__(self, path: Path | str, reason: str, detail: str):
        self.path = Path(path)
        self.reason = reason
        self.detail = detail
        super().__init__(f"{self.path}: {detail}")


class ProcessStartError(ActrecError):
    """This machine's worker processes exit before they run any task."""


class WeightsError(ActrecError):
    """A pretrained weight file is missing, cannot be downloaded or fails its hash check."""


class DivergenceError(ActrecError):
    """Training diverged (a non-finite or exploding loss) more often than the recipe lets
    it recover; the run's checkpoints are kept."""


RESTART_EXIT_CODE = 75
"""Exit status of a worker that must be restarted with --resume (EX_TEMPFAIL, sysexits.h:
"a temporary failure; the user is invited to retry"): a peer worker was lost."""


class WorkerLostError(ActrecError):
    """A multi-worker run lost a worker; every worker must restart with --resume."""

    exit_code = RESTART_EXIT_CODE


class ClusterError(ActrecError):
    """A cluster that should run the work (`actrec prepare --executor ray`) cannot: it cannot
    be reached, Ray is not installed, or a node lacks the dataset or actrec's versions."""


class UntrustedModelError(ConfigError):
    """A model file handed to actrec (an export's SavedModel, TFLite or ONNX file) holds what
    an actrec export never does (an op that may act on files, data outside its folder): it
    is not loaded unless the user says they trust its author."""
