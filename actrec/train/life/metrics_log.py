"""RUN/metrics.jsonl and the TensorBoard scalars of a run, written by the chief only.

One JSON line per logged step, epoch, validation and recovery, appended durably; a resumed
run first drops the lines written after the checkpoint it resumes from.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from actrec.files.atomic import append_line_durably, read_json_lines, write_text_atomic
from actrec.runs.folder import METRICS_FILE, TENSORBOARD_DIR


class MetricsLog:
    """metrics.jsonl and TensorBoard scalars, written by the chief only."""

    def __init__(self, run_dir: Path, enabled: bool):
        self.enabled = enabled
        self.path = run_dir / METRICS_FILE
        self._writer = None
        if enabled:
            import tensorflow as tf

            self._writer = tf.summary.create_file_writer(str(run_dir / TENSORBOARD_DIR))

    def write(self, event: str, global_step: int, **values) -> None:
        if not self.enabled:
            return
        import tensorflow as tf

        row = {"event": event, "global_step": global_step, **values, "time": time.time()}
        append_line_durably(self.path, json.dumps(row))
        with self._writer.as_default(step=global_step):
            for name, value in values.items():
                if isinstance(value, (int, float)) and name not in ("epoch", "step"):
                    tf.summary.scalar(f"{event}/{name}", value)
        self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


def truncate_metrics(path: Path, global_step: int) -> None:
    """Drop metric lines written after the checkpoint being resumed (they will be redone),
    and the "epoch" line at its step (an epoch resumed at its start writes it again)."""
    rows = read_json_lines(path)
    kept = [
        row
        for row in rows
        if row.get("global_step", 0) < global_step
        or (row.get("global_step", 0) == global_step and row.get("event") != "epoch")
    ]
    if len(kept) != len(rows):
        write_text_atomic(path, "".join(json.dumps(row) + "\n" for row in kept))
