"""RUN/best.weights.h5: the weights of the validation with the highest top-1 accuracy.

Like mmaction2's `save_best` (mmengine/hooks/checkpoint_hook.py, rule "greater"): after each
validation, a strictly higher top-1 than the best so far replaces the file, so on a tie the
earlier epoch stays. run.json's "best" entry (epoch, global step, accuracy, split) says which
validation it is, and is how a resumed run knows the score to beat. Only the chief writes.
"""

from __future__ import annotations

import math
from pathlib import Path

from actrec.runs.folder import BEST_WEIGHTS_FILE, save_weights_atomically
from actrec.runs.record import RunRecordFile


class BestWeights:
    """The best validation so far, its weights file and its entry in the run record.

    run_dir: the run folder; record_file: the chief's run.json (None on the other workers),
    whose "best" entry (a resumed run's) is kept up to date and dropped with the file when it
    comes from beyond `resumed_step` (a resume from an older checkpoint redoes that part).
    """

    def __init__(self, run_dir: Path, record_file: RunRecordFile | None, resumed_step: int):
        self.path = Path(run_dir) / BEST_WEIGHTS_FILE
        self.record_file = record_file
        self.is_chief = record_file is not None
        previous = None if record_file is None else record_file.record.best
        valid = isinstance(previous, dict) and previous.get("global_step", 0) <= resumed_step
        self.best = previous if valid else None
        if record_file is not None and not valid:
            self.path.unlink(missing_ok=True)
            record_file.update(best=None)

    def update(self, model, epoch: int, global_step: int, split: str, validation: dict) -> bool:
        """Keep `model`'s weights when `validation["accuracy"]` beats the best (every worker
        calls this; only the chief writes); whether it did."""
        accuracy = float(validation["accuracy"])
        if not math.isfinite(accuracy):
            return False
        if self.best is not None and not accuracy > self.best["accuracy"]:
            return False
        self.best = {
            "epoch": epoch,
            "global_step": global_step,
            "accuracy": accuracy,
            "split": split,
            "file": BEST_WEIGHTS_FILE,
        }
        if self.record_file is not None:
            save_weights_atomically(model, self.path)
            self.record_file.update(best=self.best)
        return True
