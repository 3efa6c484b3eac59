"""Terminal and output plumbing shared by the report commands."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import typer

EXIT_ERROR = 2
DEFAULT_WIDTH = 100
"""Table width off a terminal (CI logs, files) unless ``COLUMNS`` says otherwise."""

_debug = {"enabled": False}


def fail(message: str) -> NoReturn:
    """Print ``pd-advisor: error: ...`` on stderr and exit 2."""
    sys.stderr.write(f"pd-advisor: error: {message}\n")
    raise typer.Exit(EXIT_ERROR)


def fail_with_problems(path: Path, problems: Sequence[Any], outcome: str) -> NoReturn:
    """Print every input problem (``path:line:col: error: ...``) on stderr, then
    ``pd-advisor: error: PATH: N problems; OUTCOME`` (e.g. "nothing evaluated"), exit 2."""
    for problem in problems:
        sys.stderr.write(problem.format() + "\n")
    count = len(problems)
    fail(f"{path}: {count} problem{'s' * (count != 1)}; {outcome}")


def set_debug(enabled: bool) -> None:
    """Record the root command's ``--debug`` (tracebacks for internal errors)."""
    _debug["enabled"] = bool(enabled)


def debug_enabled() -> bool:
    """Whether ``--debug`` was given to the root command."""
    return _debug["enabled"]


def terminal_settings(to_stdout: bool) -> tuple[int, bool]:
    """(width, colour) for tables: honours ``COLUMNS`` and ``NO_COLOR``.

    Colour only on a terminal, without ``NO_COLOR`` and with ``TERM`` not ``dumb``; the width
    is ``COLUMNS`` when set, else the terminal's, else :data:`DEFAULT_WIDTH`.
    """
    tty = to_stdout and sys.stdout.isatty()
    color = tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) >= 40:
        return int(columns), color
    if tty:
        return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns, color
    return DEFAULT_WIDTH, color


def write_output(text: str, output: Path | None, wrote: str = "") -> None:
    """Write a report to stdout or ``output`` (exit 2 if the file cannot be written).

    ``wrote`` is appended to the ``pd-advisor: wrote FILE`` line on stderr.
    """
    if output is None or str(output) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}")
    sys.stderr.write(f"pd-advisor: wrote {output}{wrote}\n")
