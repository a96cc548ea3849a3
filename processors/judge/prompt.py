"""The judge's prompts: readable files in ``processors/prompts/``, versioned by content.

A prompt file is plain text cut into named sections by marker lines::

    === system ===
    You grade one run of an AI agent. ...
    === run ===
    TASK:
    ${task}
    ...

``${name}`` placeholders are filled with ``string.Template`` (so braces in a JSON example
and dollar amounts in a run's text need no escaping: only the template's own ``$`` marks
are read, and a run's text is substituted, never parsed). A literal dollar sign in a
prompt file is written ``$$``.

The version stored with every score is ``<name>@<first 12 hex of sha256(file bytes)>``:
any edit, a comma included, gives a new version, so scores from different wordings are
never mixed up.

Order matters for servers with prefix caching (llama.cpp, vLLM, hosted APIs): a judge
request is ``[system section][run section + question]``, so the fixed part comes first
and is reused from run to run, and the several questions asked about one run share the
run's text as a second prefix.
"""

from __future__ import annotations

import hashlib
import re
import string
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"
PROMPT_SUFFIX = ".txt"
DEFAULT_PROMPT = "judge-run"

_MARKER = re.compile(r"^=== ([a-z][a-z0-9_:-]*) ===[ \t]*$", re.MULTILINE)
_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


class PromptError(ValueError):
    """A prompt file is missing, malformed, or lacks a section the judge needs."""


@dataclass(frozen=True)
class Prompt:
    """One prompt file: its name, version and sections (name → template text)."""

    name: str
    version: str  # name@sha256[:12] of the file's bytes
    sections: Mapping[str, str] = field(repr=False)

    def has(self, section: str) -> bool:
        return section in self.sections

    def text(self, section: str) -> str:
        try:
            return self.sections[section]
        except KeyError:
            raise PromptError(f"prompt {self.name!r} has no section {section!r}") from None

    def render(self, section: str, **values: str) -> str:
        """The section with every ``${name}`` filled; a missing value is an error naming it."""
        try:
            return string.Template(self.text(section)).substitute(values)
        except KeyError as exc:
            raise PromptError(f"prompt {self.name!r}, section {section!r}: no value for ${{{exc.args[0]}}}") from None
        except ValueError as exc:
            raise PromptError(f"prompt {self.name!r}, section {section!r}: {exc}") from None

    def checks(self) -> dict[str, str]:
        """The ``check:<item>`` sections, item → question, in file order."""
        return {k.split(":", 1)[1]: v for k, v in self.sections.items() if k.startswith("check:")}


def parse_prompt(name: str, data: bytes) -> Prompt:
    """A prompt from a file's bytes (pure; ``load_prompt`` reads the file)."""
    if not _NAME.match(name):
        raise PromptError(f"bad prompt name {name!r}: lower-case letters, digits, '-' and '_'")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PromptError(f"prompt {name!r} is not UTF-8: {exc}") from None
    marks = list(_MARKER.finditer(text))
    if not marks:
        raise PromptError(f"prompt {name!r} has no '=== section ===' line")
    if text[: marks[0].start()].strip():
        raise PromptError(f"prompt {name!r} has text before its first section")
    sections: dict[str, str] = {}
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        key = mark.group(1)
        if key in sections:
            raise PromptError(f"prompt {name!r} has section {key!r} twice")
        sections[key] = text[mark.end() : end].strip("\n")
    version = f"{name}@{hashlib.sha256(data).hexdigest()[:12]}"
    return Prompt(name, version, MappingProxyType(sections))


def load_prompt(name: str = DEFAULT_PROMPT, folder: Path | None = None) -> Prompt:
    """``processors/prompts/<name>.txt`` (or ``folder/<name>.txt``) as a ``Prompt``."""
    path = (folder or PROMPTS_DIR) / f"{name}{PROMPT_SUFFIX}"
    try:
        data = path.read_bytes()
    except OSError as exc:
        known = sorted(p.stem for p in (folder or PROMPTS_DIR).glob(f"*{PROMPT_SUFFIX}"))
        raise PromptError(f"no prompt {name!r} ({path}: {exc.strerror}); known: {', '.join(known) or 'none'}") from None
    return parse_prompt(name, data)
