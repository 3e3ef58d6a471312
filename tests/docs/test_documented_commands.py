"""Every `actrec` command README.md and docs/*.md show parses with the real CLI's click
parser: those of the bash blocks (continuation lines joined, `&&` / `;` / `|` chains split,
`srun` / `VAR=value` prefixes dropped, `$VAR` expanded from the block's assignments or kept as
the placeholder VAR, the worker command of `actrec launch ... -- actrec ...` too) and those of
inline code spans, table cells included. Nothing is run: the commands' callbacks are never
invoked, so no TensorFlow, no files.

Placeholders in capitals (RUN, OUT, VIDEO..., N) stand for any value; a bare `...` stands for
more arguments (the ones it elides may be the required ones). An inline span of a command and
options only (`actrec eval`, `actrec train --init-from PATH`) names them: it must name a real
command and real options, not give every required one; a span with an argument
(`actrec export runs/jester-online --streaming`) is a command to copy, and must parse whole."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from repo_paths import REPO_ROOT

PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_]*(\.\.\.)?")
"""A value in capitals stands for any value (RUN, OUT, VIDEO..., N)."""
OPERATORS = {"&&", "||", ";", "|", "&", ";;", "(", ")"}
PREFIXES = {"srun", "time", "env", "exec", "nohup", "sudo"}
"""Commands that run the command after them (`srun actrec train ...`)."""
_VARIABLE = re.compile(r"\$\{(\w+)[^}]*\}|\$(\w+)")


@dataclass(frozen=True)
class DocumentedCommand:
    page: Path
    line: int
    words: tuple[str, ...]
    """The command's words from `actrec` on."""
    inline: bool
    """From an inline code span (a table cell or prose), not a bash block."""

    @property
    def where(self) -> str:
        root = REPO_ROOT if self.page.is_relative_to(REPO_ROOT) else self.page.parent
        return f"{self.page.relative_to(root)}:{self.line}"

    def __str__(self) -> str:
        return f"{self.where}: {shlex.join(self.words)}"


def _uncommented(line: str) -> str:
    """A shell line without its comment: from a `#` that starts a word, outside quotes."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index]
    return line


def _words(text: str) -> list[str]:
    """A shell line's words and operators (`&&`, `;`, `|` as words of their own)."""
    lexer = shlex.shlex(_uncommented(text), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


def _simple_commands(words: list[str]) -> list[list[str]]:
    commands, current = [], []
    for word in words:
        if word in OPERATORS:
            commands.append(current)
            current = []
        else:
            current.append(word)
    return [command for command in [*commands, current] if command]


def _expanded(word: str, variables: dict[str, str]) -> str:
    """`$name` / `${name}` as the block set it, else as the placeholder NAME."""
    return _VARIABLE.sub(lambda m: variables.get(m[1] or m[2], (m[1] or m[2]).upper()), word)


def _actrec_part(words: list[str], variables: dict[str, str]) -> list[str] | None:
    """The `actrec ...` of one simple command (after `VAR=value` and `srun ...` prefixes),
    None when the command is not actrec's; records the block's `NAME=value` assignments."""
    words = [_expanded(word, variables) for word in words]
    if words[0] == "export":
        words = words[1:]
    while words and re.fullmatch(r"\w+=.*", words[0]):
        name, _, value = words.pop(0).partition("=")
        if not words:  # an assignment of its own: later commands see it
            variables[name] = value
    if not words:
        return None
    if words[0] in PREFIXES and "actrec" in words:
        words = words[words.index("actrec") :]
    return words if words[0] == "actrec" else None


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def block_commands(page: Path) -> list[DocumentedCommand]:
    """The actrec commands of a page's bash blocks, with the line each starts on."""
    text = page.read_text(encoding="utf-8")
    found = []
    for block in re.finditer(r"```bash\n(.*?)```", text, flags=re.DOTALL):
        first_line = _line_of(text, block.start(1))
        variables: dict[str, str] = {}
        lines = block[1].split("\n")
        index = 0
        while index < len(lines):
            start, logical = index, lines[index]
            while logical.endswith("\\") and index + 1 < len(lines):  # a continuation
                index += 1
                logical = logical[:-1] + " " + lines[index]
            index += 1
            for simple in _simple_commands(_words(logical)):
                words = _actrec_part(simple, variables)
                if words:
                    found.append(DocumentedCommand(page, first_line + start, tuple(words), False))
    return found


def inline_commands(page: Path) -> list[DocumentedCommand]:
    """The `actrec ...` inline code spans of a page (prose and table cells), fenced blocks
    left out."""
    text = page.read_text(encoding="utf-8")
    fences = [m.span() for m in re.finditer(r"^\s*```.*?^\s*```", text, re.DOTALL | re.MULTILINE)]
    found = []
    for span in re.finditer(r"(?<!`)`(actrec(?:\s[^`]*)?)`(?!`)", text):
        if any(start <= span.start() < end for start, end in fences):
            continue
        for alternative in _alternatives(span[1]):
            words = _words(alternative)
            found.append(DocumentedCommand(page, _line_of(text, span.start()), tuple(words), True))
    return found


def _alternatives(span: str) -> list[str]:
    """A span's commands: `--interpreter litert|tensorflow` is both choices (in a span a `|`
    separates alternatives, not a pipe)."""
    match = re.search(r"(\S+)\|(\S+)", span)
    if not match:
        return [span]
    return [
        alternative
        for choice in match[0].split("|")
        for alternative in _alternatives(span[: match.start()] + choice + span[match.end() :])
    ]


def documented_commands() -> list[DocumentedCommand]:
    return [command for page in PAGES for command in block_commands(page) + inline_commands(page)]


# Parsing with click, without running anything.


def _find_option(command: click.Command, name: str) -> click.Option | None:
    for param in command.params:
        if isinstance(param, click.Option) and name in (*param.opts, *param.secondary_opts):
            return param
    return None


def _sample_value(param: click.Parameter, placeholder: str) -> str:
    """A value of `param`'s type for a placeholder (`--restarts N`: 1); the placeholder
    itself where the type takes any string."""
    candidates = [placeholder, "1", "1.0", "true", "1,1"]
    if isinstance(param.type, click.Choice):
        candidates += [str(choice) for choice in param.type.choices]
    for candidate in candidates:
        try:
            param.type.convert(candidate, param, None)
        except Exception:
            continue
        return candidate
    return placeholder


@dataclass
class _Reading:
    """One command's words as click will see them (placeholder values replaced by values of
    their parameter's type), whether an argument was given, and `actrec launch`'s worker
    command."""

    args: list[str]
    has_argument: bool = False
    inner: list[str] | None = None


def _read(command: click.Command, args: list[str]) -> _Reading:
    """Reads `args` by `command`'s declarations: which words are options, their values and
    arguments (a group's first argument is its command: the rest is that command's)."""
    arguments = iter(p for p in command.params if isinstance(p, click.Argument))
    out: list[str] = []
    index, only_arguments, has_argument = 0, False, False
    while index < len(args):
        word = args[index]
        index += 1
        if word == "--" and not only_arguments:
            out.append(word)
            only_arguments = True
            continue
        if only_arguments or not word.startswith("-") or word == "-":
            if isinstance(command, click.Group):
                return _Reading(out + args[index - 1 :], True)
            param = next(arguments, None)
            if param is not None and param.nargs == -1:
                rest = args[index - 1 :]
                if isinstance(param.type, click.types.UnprocessedParamType):
                    return _Reading(out + rest, True, rest)
                return _Reading(out + [_placeholder_free(param, w) for w in rest], True)
            out.append(_placeholder_free(param, word) if param else word)
            has_argument = True
            continue
        name, equals, value = word.partition("=")
        option = _find_option(command, name)
        if option is None or option.is_flag or option.count:
            out.append(word)  # a flag, or an unknown option click refuses
        elif equals:
            out.append(f"{name}={_placeholder_free(option, value)}")
        else:
            values = args[index : index + option.nargs]
            if _value_is_optional(option) and (not values or values[0].startswith("-")):
                values = []  # `--resume` alone: its flag value
            out += [word, *(_placeholder_free(option, v) for v in values)]
            index += len(values)
    return _Reading(out, has_argument)


def _value_is_optional(option: click.Option) -> bool:
    """An option whose value may be left out (`--resume [CHECKPOINT]`)."""
    return bool(getattr(option, "_flag_needs_value", False))


def _placeholder_free(param: click.Parameter, value: str) -> str:
    return _sample_value(param, value) if PLACEHOLDER.fullmatch(value) else value


class UnparsedError(Exception):
    """A documented command that click refuses."""


def parse(words: list[str], *, mention: bool = False) -> None:
    """Parse `words` (actrec ...) with the CLI's click commands as a shell would hand them to
    it, without invoking any callback; raises UnparsedError with click's message.

    mention: the command may leave out required parameters (an inline span naming a command
    and options, or a command with `...`), and end with an option that takes a value."""
    from actrec_cli.main import main

    args = list(words[1:])
    elided = "..." in args
    args = [word for word in args if word != "..."]
    mention = mention or elided
    command: click.Command = main
    context = None
    name = "actrec"
    while True:
        reading = _read(command, args)
        if mention and not elided and reading.has_argument and not isinstance(command, click.Group):
            mention = False  # an argument given: a command to copy
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # --help's text
                context = command.make_context(name, list(reading.args), parent=context)
        except click.exceptions.Exit:  # --help, --version: parsed
            return
        except click.MissingParameter as error:
            if mention:
                return
            raise UnparsedError(error.format_message()) from None
        except click.BadOptionUsage as error:
            if mention and "requires" in error.message and args and args[-1] == error.option_name:
                return
            raise UnparsedError(error.format_message()) from None
        except click.UsageError as error:
            if mention and isinstance(command, click.Group) and not args:
                return  # `actrec pretrained`: the group named
            raise UnparsedError(error.format_message()) from None
        if not isinstance(command, click.Group):
            break
        rest = [*context._protected_args, *context.args]
        if not rest:
            if mention:
                return
            raise UnparsedError(f"{name}: no command given")
        try:
            name, command, args = command.resolve_command(context, rest)
        except click.UsageError as error:
            raise UnparsedError(error.format_message()) from None
    if reading.inner and reading.inner[0] == "actrec":
        parse(reading.inner, mention=mention and elided)


DOCUMENTED = documented_commands()


def test_the_docs_commands_are_found():
    """Blocks and spans of every kind are collected (a changed fence or span would lose
    them): the README's, the docs', table cells, `launch -- actrec`, Slurm's `srun actrec`."""
    pages = {command.page.name for command in DOCUMENTED}
    assert {"README.md", "cluster.md", "model-zoo.md", "training.md", "data.md"} <= pages
    assert sum(not c.inline for c in DOCUMENTED) >= 60
    assert sum(c.inline for c in DOCUMENTED) >= 100
    texts = {shlex.join(c.words) for c in DOCUMENTED}
    assert any(t.startswith("actrec launch") and "-- actrec train" in t for t in texts)
    zoo = [c.words[:2] for c in DOCUMENTED if c.page.name == "model-zoo.md" and c.inline]
    assert ("actrec", "export") in zoo  # a table cell


def test_every_documented_command_parses():
    """Every command of a bash block, and every inline `actrec ...` span, parses; each
    failure is named with its page, line and command."""
    failures = []
    for command in DOCUMENTED:
        try:
            parse(list(command.words), mention=command.inline)
        except UnparsedError as error:
            failures.append(f"{command}\n    -> {error}")
    listed = "\n".join(failures)
    assert not failures, f"{len(failures)} documented commands do not parse:\n{listed}"


# The parser's own behaviour, on commands written here.


@pytest.mark.parametrize(
    "text",
    [
        "actrec export runs/jester-online --streaming",  # the issue's: --out is required
        "actrec train --recipe synthetic-tsm --nonsense",
        "actrec eval RUN --protocol no-such-protocol",
        "actrec launch -n 2 -- actrec train --nonsense",
        "actrec no-such-command",
    ],
)
def test_a_command_that_does_not_parse_is_refused(text):
    with pytest.raises(UnparsedError):
        parse(shlex.split(text))


@pytest.mark.parametrize(
    ("text", "inline"),
    [
        (
            "actrec launch -n N --restarts N -- actrec train --data DATA --workdir RUN --resume",
            False,
        ),
        ("actrec launch -n 2 -- actrec eval ...", False),
        ("actrec eval", True),
        ("actrec train --init-from", True),
        ("actrec pretrained", True),
        ("actrec predict --help", False),
    ],
)
def test_placeholders_ellipses_and_mentions_parse(text, inline):
    parse(shlex.split(text), mention=inline)


def test_a_span_with_an_argument_must_parse_whole():
    with pytest.raises(UnparsedError, match="--out"):
        parse(shlex.split("actrec export runs/jester-online --streaming"), mention=True)


def test_a_block_is_lexed_as_the_shell_would(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "text\n```bash\nRUN=runs/a  # a comment\n"
        "srun actrec eval $RUN \\\n   --protocol tsm-8x3 && echo done; "
        "actrec export ${RUN} --out $out\n"
        "actrec launch -n 2 -- actrec eval ...\n```\n",
        encoding="utf-8",
    )
    commands = [(c.line, c.words) for c in block_commands(page)]
    assert commands == [
        (4, ("actrec", "eval", "runs/a", "--protocol", "tsm-8x3")),
        (4, ("actrec", "export", "runs/a", "--out", "OUT")),  # $out: the placeholder OUT
        (6, ("actrec", "launch", "-n", "2", "--", "actrec", "eval", "...")),
    ]
