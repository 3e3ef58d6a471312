"""Help texts a newcomer reads first: examples kept whole, one name per argument."""

from __future__ import annotations

import re

import pytest


@pytest.mark.parametrize("columns", ["60", "80", "120"])
def test_launch_help_keeps_its_example_command_whole(cli_runner, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", columns)
    lines = [line.strip() for line in cli_runner("launch", "--help").output.splitlines()]
    first = lines.index("actrec launch -n 2 -- actrec train --recipe tsm-kinetics400 \\")
    assert lines[first + 1] == "--data DATA --workdir RUN"


@pytest.mark.parametrize(
    ("command", "argument"),
    [("eval", "RUN"), ("export", "RUN_DIR"), ("inspect", "PREPARED"), ("predict", "VIDEO")],
)
def test_usage_line_names_the_argument_the_help_text_describes(cli_runner, command, argument):
    output = cli_runner(command, "--help").output
    usage = output.splitlines()[0]
    assert re.search(rf"\[OPTIONS\] {argument}\b", usage), usage
    description = output.split("Options:")[0].split("\n", 1)[1]
    assert re.search(rf"\b{argument}\b", description), description
    other_names = {"RUN", "RUN_DIR"} - {argument}
    for other in other_names if argument in {"RUN", "RUN_DIR"} else ():
        assert not re.search(rf"\b{other}\b", description), (other, description)
