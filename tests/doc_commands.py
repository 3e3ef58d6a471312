"""The commands a Markdown page (README.md, docs/*.md) gives in its bash blocks."""

from __future__ import annotations

import re
import shlex


def bash_blocks(text: str) -> list[str]:
    """The bash blocks of a Markdown page, each as its text."""
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
