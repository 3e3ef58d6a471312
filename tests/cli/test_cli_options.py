"""Every numeric command-line option is checked where it is parsed: a value out of range
exits with code 2 (click's usage error) and a message naming the option, before any work
starts or any file is written."""

from __future__ import annotations

import pytest

# (command line, the option the message must name); every line is otherwise valid enough
# to reach the option's check, and none may create anything under the test's folder.
OUT_OF_RANGE = [
    (["prepare", "synthetic", "--workers", "-2"], "--workers"),
    (["prepare", "synthetic", "--workers", "0"], "--workers"),
    (["prepare", "synthetic", "--fps", "0"], "--fps"),
    (["prepare", "synthetic", "--fps", "-25"], "--fps"),
    (["prepare", "synthetic", "--jpeg-quality", "101"], "--jpeg-quality"),
    (["prepare", "synthetic", "--jpeg-quality", "0"], "--jpeg-quality"),
    (["prepare", "synthetic", "--min-frames", "0"], "--min-frames"),
    (["prepare", "synthetic", "--shard-size-mb", "0"], "--shard-size-mb"),
    (["prepare", "synthetic", "--shard-size-mb", "-1"], "--shard-size-mb"),
    (["prepare", "folder", "--seed", "-1"], "--seed"),
    (["prepare", "folder", "--val-fraction", "1"], "--val-fraction"),
    (["prepare", "folder", "--val-fraction", "-0.1"], "--val-fraction"),
    (["prepare", "folder", "--test-fraction", "1.5"], "--test-fraction"),
    (["prepare", "synthetic", "--workers", "two"], "--workers"),
    (["inspect", "PREPARED", "--videos", "-1"], "--videos"),
    (["inspect", "PREPARED", "--frames", "0"], "--frames"),
    (["synthetic", "ROOT", "--videos-per-class", "1"], "--videos-per-class"),
    (["synthetic", "ROOT", "--frames", "1"], "--frames"),
    (["synthetic", "ROOT", "--seed", "-3"], "--seed"),
    (["train", "--data", "D", "--workdir", "W", "--stop-after-steps", "0"], "--stop-after-steps"),
    (["train", "--data", "D", "--workdir", "W", "--batch-size", "-4"], "--batch-size"),
    (["train", "--data", "D", "--workdir", "W", "--batch-size", "0"], "--batch-size"),
    (["train", "--data", "D", "--workdir", "W", "--memory-budget", "-1GiB"], "--memory-budget"),
    (["launch", "-n", "0", "--", "true"], "--num-workers"),
    (["launch", "-n", "2", "--port", "80", "--", "true"], "--port"),
    (["launch", "-n", "2", "--port", "70000", "--", "true"], "--port"),
    (["launch", "-n", "2", "--timeout", "0", "--", "true"], "--timeout"),
    (["launch", "-n", "2", "--grace-period", "-1", "--", "true"], "--grace-period"),
    (["eval", "RUN", "--segments", "0"], "--segments"),
    (["eval", "RUN", "--clips", "-1"], "--clips"),
    (["eval", "RUN", "--crops", "5"], "--crops"),
    (["eval", "RUN", "--batch-size", "0"], "--batch-size"),
    (["eval", "RUN", "--wait-timeout", "0"], "--wait-timeout"),
    (["eval", "--fuse", "A", "B", "--weights", "1,-1"], "--weights"),
    (["eval", "--fuse", "A", "B", "--weights", "0,0"], "--weights"),
    (["eval", "--fuse", "A", "B", "--weights", "1,nan"], "--weights"),
    (["export", "RUN", "--out", "OUT", "--top-k", "0"], "--top-k"),
    (["export", "RUN", "--out", "OUT", "--weights", "1,inf"], "--weights"),
    (["predict", "VIDEO", "--model", "MODEL", "--top-k", "0"], "--top-k"),
]


# Values that click parses but only the library can judge (they depend on other values):
# exit code 1 and a message naming the option and what is allowed.
REFUSED_BY_THE_LIBRARY = [
    (["synthetic", "ROOT", "--size", "16x16"], "width=16"),
    (["train", "--recipe", "synthetic-rgb", "--data", "D", "--workdir", "W",
      "--set", "runtime.log_every_steps=0"], "runtime.log_every_steps"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("arguments", "fragment", "exit_code"),
    [(*case, 2) for case in OUT_OF_RANGE] + [(*case, 1) for case in REFUSED_BY_THE_LIBRARY],
)
def test_a_number_out_of_range_is_refused_naming_the_option(
    arguments, fragment, exit_code, cli_runner, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    result = cli_runner(*arguments)
    assert result.exit_code == exit_code, result.output
    assert fragment in result.output and "Traceback" not in result.output
    assert not any(tmp_path.iterdir())  # refused before anything was written
