"""What README.md and docs/*.md show a user to type: code blocks and inline code, the
``gpu-insights`` commands and ``-c key=value`` settings in them, and the README's deploy steps.
The docs tests and the deploy-steps tests read the docs through this module alone."""

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

#: A fenced block, also indented inside a list item.
_FENCE = re.compile(r"^ *```[^\n]*\n(.*?)^ *```", re.M | re.S)
#: An inline code span, which may wrap onto the next line.
_INLINE = re.compile(r"`([^`]+)`")
_SETTING = re.compile(r"(?:^|\s)(?:-c|--context)\s+([A-Za-z0-9_@:.\-/]+)=")


def pages() -> list[Path]:
    """README.md and every page of docs/."""
    return [README, *sorted(DOCS.glob("*.md"))]


def fenced_blocks(text: str) -> list[str]:
    return _FENCE.findall(text)


def code(text: str) -> list[str]:
    """Every fenced block's lines and every inline code span (outside the fenced blocks)."""
    blocks = fenced_blocks(text)
    lines = [line for block in blocks for line in block.splitlines()]
    spans = [" ".join(span.split()) for span in _INLINE.findall(_FENCE.sub("", text))]
    return lines + spans


def gpu_insights_commands(text: str) -> list[str]:
    """Each ``gpu-insights ...`` command shown in code, from the name to the end of its command
    (a pipe between words, a ``#`` comment or the end of the line)."""
    found = []
    for snippet in code(text):
        for match in re.finditer(r"(?:^|[\s(])gpu-insights(\s[^#\n]*)?", snippet):
            command = ("gpu-insights" + (match.group(1) or "")).split(" | ", 1)[0]
            found.append(command.strip())
    return found


def context_keys(text: str) -> list[str]:
    """The key of every ``-c key=value`` shown in code (``-c KEY=VALUE``, the usage's
    placeholder, aside)."""
    keys = [key for snippet in code(text) for key in _SETTING.findall(snippet)]
    return [key for key in keys if key.lower() != "key"]


@dataclass(frozen=True)
class DeploySteps:
    """The README's numbered deploy steps, as a user would follow them."""

    #: The ``context`` object step 2 puts in cdk.json.
    context: dict[str, Any]
    #: Each shell command of the steps' code blocks, in order (comments dropped).
    commands: list[str]


def deploy_steps(text: str | None = None) -> DeploySteps:
    """Read the README's "Deploy" section: its one JSON block is cdk.json's ``context`` entry
    (shown as ``"context": {...}``), its shell blocks the commands."""
    readme = README.read_text() if text is None else text
    section = readme.split("\n## Deploy\n", 1)[1].split("\n## ", 1)[0]
    context: dict[str, Any] | None = None
    commands = []
    for block in fenced_blocks(re.sub(r"^ {3}", "", section, flags=re.M)):
        if block.lstrip().startswith('"context"'):
            context = json.loads("{" + block + "}")["context"]
            continue
        for line in block.splitlines():
            command = line.split(" #", 1)[0].strip()
            if command:
                commands.append(command)
    if context is None:
        raise ValueError('the README\'s Deploy section shows no "context" block')
    return DeploySteps(context=context, commands=commands)


def argv(command: str, **placeholders: str) -> list[str]:
    """A ``gpu-insights`` command's arguments, up to a pipe, with ``<Name>`` placeholders
    filled in (each one must be given)."""
    words = shlex.split(command.split("|", 1)[0])
    assert words[0] == "gpu-insights", command
    return [re.sub(r"<(\w+)>", lambda m: placeholders[m.group(1)], word) for word in words[1:]]
