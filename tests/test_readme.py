"""The README's commands: every `actrec` command parses against the real CLI, the first
command is the quickstart, and the fast ones run as written on the synthetic set."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import click
import pytest
from conftest import REPO_ROOT

README = REPO_ROOT / "README.md"
# Commands the test runs as written, in README order (prefixes of their words); the others
# (downloads, real datasets, minutes of training) are only parsed.
FAST_COMMANDS = (
    ("actrec", "recipes"),
    ("actrec", "pretrained", "list"),
    ("actrec", "inspect", "datasets/prepared/synthetic"),
    ("actrec", "eval", "runs/synthetic-flow"),
    ("actrec", "eval", "--fuse", "runs/synthetic-tsm"),
    ("actrec", "export", "runs/synthetic-tsm"),
    ("actrec", "predict"),
)


def bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL)


def shell_commands(block: str) -> list[list[str]]:
    """The commands of a bash block: continuation lines joined, comments dropped, `&&`
    chains split; each as its words."""
    joined = re.sub(r"\\\n\s*", " ", block)
    commands = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if not words or words[0].startswith("#"):
            continue
        current: list[str] = []
        for word in words:
            if word == "&&":
                commands.append(current)
                current = []
            else:
                current.append(word)
        commands.append(current)
    return [command for command in commands if command]


def readme_actrec_commands() -> list[list[str]]:
    commands = []
    for block in bash_blocks(README.read_text(encoding="utf-8")):
        commands += [c for c in shell_commands(block) if c[0] in ("actrec", "srun")]
    return [c[c.index("actrec") :] for c in commands if "actrec" in c]


def parse_command(words: list[str]) -> None:
    """Parse `words` (actrec ...) with the real click commands, without running them:
    unknown commands, options or bad choices raise click.UsageError."""
    from actrec_cli.main import main

    command: click.Command = main
    context = command.make_context("actrec", list(words[1:]), resilient_parsing=False)
    while isinstance(command, click.Group):
        arguments = [*context._protected_args, *context.args]
        name, command, rest = command.resolve_command(context, arguments)
        context = command.make_context(name, rest, parent=context)
    if words[1] == "launch":  # the worker command after "--" must parse too
        parse_command(words[words.index("--") + 1 :])


def test_the_first_command_installs_and_runs_the_quickstart():
    first = shell_commands(bash_blocks(README.read_text(encoding="utf-8"))[0])
    assert first == [["pip", "install", "-e", "."], ["actrec", "quickstart"]]


def test_every_readme_command_parses_against_the_cli():
    commands = readme_actrec_commands()
    assert len(commands) >= 30
    for words in commands:
        if "--help" in words or "-h" in words:
            continue
        try:
            parse_command(words)
        except click.UsageError as error:
            pytest.fail(f"README command {' '.join(words)!r} does not parse: {error}")


def _is_fast(words: list[str]) -> bool:
    return any(tuple(words[: len(prefix)]) == prefix for prefix in FAST_COMMANDS)


@pytest.mark.slow
def test_the_fast_readme_commands_run_as_written(
    cli_runner, tmp_path, monkeypatch, synthetic_prepared, synthetic_flow_run, synthetic_tsm_run
):
    """In a folder laid out as the README's synthetic walkthrough leaves it (the session's
    prepared set and trained runs linked in), every fast command succeeds as written."""
    links = {
        "datasets/raw/synthetic": synthetic_prepared.parent / "raw",
        "datasets/prepared/synthetic": synthetic_prepared,
        "runs/synthetic-flow": synthetic_flow_run[1],
        "runs/synthetic-tsm": synthetic_tsm_run[1],
    }
    for name, target in links.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).symlink_to(target)
    monkeypatch.chdir(tmp_path)
    ran, shown = [], {}
    for words in readme_actrec_commands():
        if not _is_fast(words):
            continue
        result = cli_runner(*words[1:])
        assert result.exit_code == 0, f"{' '.join(words)}:\n{result.output}"
        ran.append(words[1])
        if words[1] == "predict":
            shown.update(_readme_predictions(cli_runner, words))
    assert {"recipes", "inspect", "eval", "export", "predict"} <= set(ran), ran
    # Every prediction the README shows is right: the video's class is its folder's name.
    assert len(shown) >= 4
    assert {video: Path(video).parent.name for video in shown} == shown


def _readme_predictions(cli_runner, words: list[str]) -> dict[str, str]:
    """{video: predicted class} of a README `actrec predict` command (run with --json)."""
    arguments = words[1:] if "--json" in words else [*words[1:], "--json"]
    result = cli_runner(*arguments)
    assert result.exit_code == 0, result.output
    predictions = json.loads(result.stdout)
    return {item["video"]: item["top_k"][0]["class"] for item in predictions}
