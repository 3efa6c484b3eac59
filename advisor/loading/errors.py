"""Input problems located in a file, and the exception that carries all of them.

Every problem with a user-authored file (workload, ``.pd-advisor.yaml``) is reported as
``path:line:col: error: dotted.key: message`` so editors and CI logs can jump to it. The
loaders collect every problem they can find before raising one :class:`InputError`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from advisor.escaping import visible


@dataclass(frozen=True, kw_only=True)
class InputProblem:
    """One thing wrong with an input file, with a 1-based position."""

    path: str
    """The file as the user named it (not made absolute)."""
    line: int
    """1-based line of the offending node (1 for file-level problems)."""
    col: int
    """1-based column of the offending node (1 for file-level problems)."""
    key: str
    """Dotted key of the offending value (``slo.ttft_ms``, ``traffic.phases.0.share``); empty
    for file-level problems such as a missing file or a YAML syntax error."""
    message: str
    """What is wrong and, where possible, how to fix it."""

    def format(self) -> str:
        """Render as ``path:line:col: error: key: message`` (``key: `` omitted when empty).

        The result is always one line of printable text, whatever the input held: see
        :func:`one_line` and :func:`shown_key`.
        """
        prefix = f"{one_line(self.path)}:{self.line}:{self.col}: error: "
        message = one_line(self.message)
        return prefix + (f"{shown_key(self.key)}: {message}" if self.key else message)


def one_line(text: str) -> str:
    """``text`` with every non-printable character escaped: the rule of
    :func:`advisor.escaping.visible`.

    Keys and values quoted in messages come from the user's file and may hold line breaks
    (``\\n``, ``\\u2028``), control characters (``\\x1b``) or bidirectional overrides; escaped,
    they can neither split a problem over several lines nor rewrite the terminal.
    """
    return visible(text)


def shown_key(key: str) -> str:
    """A dotted key as shown in a problem line: quoted (``' '``) unless it reads unambiguously.

    A key is quoted when a part is empty or has surrounding blanks, or when it holds ``": "``
    (the separator before the message) or a non-printable character.
    """
    parts = key.split(".")
    if (all(part and part == part.strip() for part in parts) and ": " not in key
            and key.isprintable()):
        return key
    return repr(key)


def sort_problems(problems: Iterable[InputProblem]) -> list[InputProblem]:
    """Order problems by file (in order of first appearance), then by line and column."""
    items = list(problems)
    file_rank: dict[str, int] = {}
    for problem in items:
        file_rank.setdefault(problem.path, len(file_rank))
    return sorted(items, key=lambda p: (file_rank[p.path], p.line, p.col))


class InputError(Exception):
    """An input file could not be turned into a scenario; ``problems`` says why, all at once."""

    def __init__(self, problems: Iterable[InputProblem]) -> None:
        self.problems: list[InputProblem] = sort_problems(problems)
        super().__init__(self.format())

    def format(self) -> str:
        """All problems, one formatted line each."""
        return "\n".join(p.format() for p in self.problems)


def describe(value: Any) -> str:
    """A short, YAML-flavoured description of a value for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{str(value).lower()} (boolean)"
    if isinstance(value, int):
        digits = str(value)
        if len(digits) > 24:
            return f"{digits[:12]}... (a {len(digits)}-digit integer)"
        return f"{digits} (integer)"
    if isinstance(value, float):
        return f"{value:g} (number)"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"'{shown}' (string)"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__
