"""Progress on output that is not a terminal: whole plain lines at the log interval."""

from __future__ import annotations

import io
import re

from actrec_cli.line_progress import LineProgress
from rich.console import Console


def _progress(every: int | None = None, interval_seconds: float = 30.0):
    out = io.StringIO()
    console = Console(file=out, width=40)  # narrow: a rich bar would be cut to 40 columns
    return LineProgress("steps", console, every, interval_seconds), out


def test_training_lines_come_every_log_interval_whole_and_unwrapped():
    progress, out = _progress(every=2)
    progress.start("epoch 1/80", 5)
    for step in range(5):
        progress.advance(1, clips=16)
        progress.show(loss=2.0 - step / 10, accuracy=0.0625, lr=0.001, batch=16)
    progress.finish()
    lines = out.getvalue().splitlines()
    assert len(lines) == 3  # steps 2 and 4, then the end of the stage
    pattern = (
        r"^epoch 1/80 (\d)/5 \(\d+%\) [\d.]+ steps/s \d+ clips/s loss ([\d.]+) "
        r"accuracy 0\.0625 lr 0\.001 batch 16 elapsed \d+:\d\d:\d\d ETA \d+:\d\d:\d\d$"
    )
    found = [re.match(pattern, line) for line in lines]
    assert all(found), lines
    assert [(match[1], match[2]) for match in found] == [("2", "1.9"), ("4", "1.7"), ("5", "1.6")]


def test_without_an_interval_lines_follow_time_and_the_end_of_each_stage():
    progress, out = _progress(interval_seconds=3600)
    progress.start("preparing ucf101", 3)
    for _ in range(3):
        progress.advance(1, frames=100)
    progress.message("resuming: 2 videos already prepared in /some/very/long/folder/name/here")
    progress.finish()
    progress.finish()  # a second finish writes nothing more
    lines = out.getvalue().splitlines()
    assert lines[0] == "resuming: 2 videos already prepared in /some/very/long/folder/name/here"
    assert re.match(r"^preparing ucf101 3/3 \(100%\) [\d.]+ steps/s \d+ frames/s elapsed", lines[1])
    assert len(lines) == 2

    progress, out = _progress(interval_seconds=0)  # every report is due
    progress.start("reading records", None)
    progress.advance(1)
    progress.advance(1)
    assert [line.split(" ")[2] for line in out.getvalue().splitlines()] == ["1", "2"]
