"""The CLI contract every input must satisfy, checked on ``recommend --format json`` and ``check``.

For any file, whatever it holds:

* the exit code is 0 or 2 for ``recommend`` and 0, 1 or 2 for ``check``, and ``check``'s
  exit code follows the ``status`` of its JSON document;
* no exception escapes (the CLI runs in-process with ``--debug`` and
  ``catch_exceptions=False``, so an internal error surfaces with its traceback), and neither
  ``Traceback`` nor ``internal error`` appears in the output;
* JSON output parses strictly (NaN and Infinity refused, no number overflowing to infinity),
  validates against the committed output schema (draft-07), holds no non-finite number, and
  every latency or rate (key ending in ``_ms`` or ``_s``) is positive or null;
* text meant for people (summary, reasons, messages) never says ``nan`` or ``inf``, and every
  renderer of the document (table, markdown, GitHub, SARIF, JUnit) runs;
* on exit 2 every diagnostic on stderr is ``path:line:col: error: key: message`` with
  1-based positions inside the file, followed by the command's one-line summary;
* the two commands agree: the same problems for a file that cannot be evaluated, and the
  same report (without the verdict boundaries, which ``check`` skips) for one that can.
"""

from __future__ import annotations

import functools
import html
import json
import math
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from hypothesis import currently_in_test_context, event
from jsonschema import Draft7Validator

from advisor.render.report_schema import SCHEMA_PATH

PROBLEM_RE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): error: (?P<text>\S.*)$")
"""One located problem: ``path:line:col: error: [key: ]message``."""

HUMAN_TEXT_KEYS = frozenset({"summary", "reasons", "message", "explanation", "question",
                             "description", "reason", "measure_next"})
"""Keys whose strings are prose for people (checked for ``nan``/``inf``)."""

YAML_LINE_BREAKS = ("\n", "\r", "\x85", "\u2028", "\u2029")
"""Characters YAML counts as line breaks (an upper bound on its line numbers: CRLF counts 2)."""

NON_FINITE_WORD_RE = re.compile(r"(?<![\w.])(nan|inf)(?!\w)", re.IGNORECASE)
"""``nan`` or ``inf`` as a word: a non-finite number that leaked into text."""


@dataclass(frozen=True)
class CliRun:
    """One in-process CLI invocation."""

    args: tuple[str, ...]
    exit_code: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        """The invocation and its output, for assertion messages."""
        return (f"pd-advisor {' '.join(self.args)} -> exit {self.exit_code}\n--- stdout\n"
                f"{self.stdout[:4000]}\n--- stderr\n{self.stderr[:4000]}")


@functools.cache
def _command() -> Any:
    """The Click command of the Typer app, built once (Typer rebuilds it on every
    ``CliRunner.invoke``, which costs more than validating a workload)."""
    import typer.main

    from advisor.cli.app import app

    return typer.main.get_command(app)


def invoke(*args: str) -> CliRun:
    """Run ``pd-advisor --debug ARGS`` in-process, as ``CliRunner.invoke`` does.

    The command runs inside :meth:`typer.testing.CliRunner.isolation` (captured stdout and
    stderr); exceptions other than ``SystemExit`` propagate, as with ``catch_exceptions=False``.
    """
    from typer.testing import CliRunner

    command = _command()
    runner = CliRunner()
    argv = ("--debug", *args)
    with runner.isolation() as (stdout, stderr, _):
        try:
            command.main(args=list(argv), prog_name="pd-advisor")
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        out, err = stdout.getvalue(), stderr.getvalue()
    return CliRun(tuple(args), code, out.decode(runner.charset), err.decode(runner.charset))


@functools.cache
def output_schema() -> dict[str, Any]:
    """The committed JSON output schema."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@functools.cache
def validator(definition: str) -> Draft7Validator:
    """A draft-07 validator for one definition of the output schema."""
    schema = output_schema()
    return Draft7Validator({**schema["definitions"][definition],
                            "definitions": schema["definitions"]})


def _refuse_constant(name: str) -> Any:
    raise AssertionError(f"JSON output contains {name}")


def parse_json(text: str) -> Any:
    """Parse JSON output, refusing NaN, Infinity and -Infinity."""
    return json.loads(text, parse_constant=_refuse_constant)


def leaves(doc: Any) -> Iterator[tuple[str, str, Any]]:
    """Leaves with the key that holds them (list items take their list's key)."""
    def go(value: Any, path: str, key: str) -> Iterator[tuple[str, str, Any]]:
        if isinstance(value, dict):
            for name, item in value.items():
                yield from go(item, f"{path}/{name}", str(name))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                yield from go(item, f"{path}/{index}", key)
        else:
            yield path, key, value
    return go(doc, "", "")


def user_strings(report: dict[str, Any] | None) -> list[str]:
    """Names the workload's author chose (longest first); they may say anything, ``nan`` too."""
    if not report:
        return []
    names = [report.get("name"), *(phase["name"] for phase in report["inputs"]["traffic"])]
    return sorted({name for name in names if name}, key=len, reverse=True)


def non_finite_word(text: str, user: list[str]) -> str | None:
    """The context of a ``nan``/``inf`` word in ``text`` that is not part of a ``user``
    string (a name may say anything), or None."""
    quoted = [(m.start(), m.end()) for name in user
              for m in re.finditer(re.escape(name), text)]
    for found in NON_FINITE_WORD_RE.finditer(text):
        if not any(start <= found.start() and found.end() <= end for start, end in quoted):
            return text[max(0, found.start() - 200):found.end() + 100]
    return None


def check_document(doc: Any, definition: str, user: list[str]) -> None:
    """Schema, finiteness, positive latencies and readable prose of one JSON document.

    Input problems (``problems``) are exempt from the prose check: they quote the input.
    """
    errors = sorted(validator(definition).iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "schema violations:\n" + "\n".join(
        f"  {'/'.join(map(str, e.absolute_path))}: {e.message[:300]}" for e in errors[:10])
    for path, key, value in leaves(doc):
        if isinstance(value, float):
            assert math.isfinite(value), f"{path} = {value}"
        if (key.endswith(("_ms", "_s")) and not isinstance(value, bool)
                and isinstance(value, int | float)):
            assert value > 0, f"{path} = {value} (a latency or rate must be positive or null)"
        if key in HUMAN_TEXT_KEYS and isinstance(value, str) and "/problems/" not in path:
            context = non_finite_word(value, user)
            assert context is None, f"{path} says ...{context}..."
    for boundary in doc.get("boundaries", []) if isinstance(doc, dict) else []:
        if boundary["key"].endswith(("_ms", "_s")):
            for name in ("current", "flips_at"):
                value = boundary[name]
                assert value is None or value > 0, f"boundary {boundary['key']}.{name} = {value}"


def render_everything(doc: dict[str, Any], kind: str, user: list[str]) -> None:
    """Every renderer of the document runs and its output is well-formed (SARIF is JSON, JUnit
    is XML, GitHub annotations are one command per line); none says ``nan`` or ``inf`` (input
    problems, which quote the input, excepted)."""
    from advisor.render.formats import RECOMMEND_FORMATS, Format, render

    formats = RECOMMEND_FORMATS if kind == "recommendation" else tuple(Format)
    # markdown and HTML show user strings escaped (``&lt;``): those are user text too
    user = [*user, *(html.escape(u, quote=q) for u in user for q in (False, True))]
    for fmt in formats:
        if fmt is Format.json:
            continue
        text = render(doc, fmt, width=120)
        if fmt is Format.sarif:
            parse_json(text)
        elif fmt is Format.junit:
            ElementTree.fromstring(text)  # raises on a character XML cannot hold
        elif fmt is Format.github:  # the runner reads one workflow command per line
            for line in text.rstrip("\n").split("\n"):
                assert line.startswith(("::", "pd-advisor:")), f"github line {line!r}"
        if kind == "check" and doc["status"] == "error":
            continue
        context = non_finite_word(text, user)
        assert context is None, f"{fmt.value} rendering says ...{context}..."


def located_problems(stderr: str, summary_re: re.Pattern[str], file_path: Path,
                     file_lines: int) -> list[str]:
    """The problem lines of stderr, checked: located format, 1-based positions, summary last.

    Positions in ``file_path`` must lie within its ``file_lines`` lines (or one past the
    end, where YAML reports an unexpected end of file); other paths are profile files.
    """
    lines = stderr.splitlines()
    assert lines, "exit 2 without a diagnostic"
    assert summary_re.fullmatch(lines[-1]), f"last stderr line is not the summary: {lines[-1]!r}"
    problems = lines[:-1]
    for line in problems:
        match = PROBLEM_RE.match(line)
        assert match, f"diagnostic not in path:line:col: error: key: message format: {line!r}"
        row, col = int(match["line"]), int(match["col"])
        assert row >= 1 and col >= 1, line
        if match["path"] == str(file_path):
            assert row <= file_lines + 1, f"line {row} beyond the file's {file_lines}: {line!r}"
    return problems


def assert_no_crash(run: CliRun) -> None:
    """No traceback and no internal error, in either stream (``--debug`` raises those, but a
    command that caught an exception itself would print them)."""
    assert "Traceback" not in run.stdout + run.stderr, run.describe()
    assert "internal error" not in run.stderr, run.describe()


def check_recommend(run: CliRun, path: Path, file_lines: int) -> dict[str, Any] | None:
    """The contract of ``recommend --format json``; returns the report (None on exit 2)."""
    assert_no_crash(run)
    assert run.exit_code in (0, 2), run.describe()
    if run.exit_code == 2:
        assert run.stdout == "", run.describe()
        summary = re.compile(rf"pd-advisor: error: {re.escape(str(path))}: (\d+) problems?; "
                             "nothing evaluated")
        problems = located_problems(run.stderr, summary, path, file_lines)
        count = int(summary.fullmatch(run.stderr.splitlines()[-1])[1])  # type: ignore[index]
        assert count == len(problems) >= 1, run.describe()
        return None
    doc = parse_json(run.stdout)
    user = user_strings(doc)
    check_document(doc, "recommendation", user)
    assert doc["input"]["path"] == str(path)
    expected_stderr = ("" if doc["slo_met"] else
                       f"pd-advisor: {path}: no plan meets the SLOs (see the report)\n")
    assert run.stderr == expected_stderr, run.describe()
    render_everything(doc, "recommendation", user)
    return doc  # type: ignore[no-any-return]


def check_check(run: CliRun, path: Path, file_lines: int) -> dict[str, Any]:
    """The contract of ``check --format json``; returns the check document."""
    assert_no_crash(run)
    assert run.exit_code in (0, 1, 2), run.describe()
    doc = parse_json(run.stdout)
    (entry,) = doc["files"]
    user = user_strings(entry["report"])
    check_document(doc, "check", user)
    assert {"pass": 0, "fail": 1, "error": 2}[doc["status"]] == run.exit_code, run.describe()
    assert entry["path"] == str(path)
    summary = re.compile(r"pd-advisor: checked 1 file: \d passed, \d failed, \d could not be "
                         "evaluated")
    if run.exit_code == 2:
        problems = located_problems(run.stderr, summary, path, file_lines)
        assert len(problems) == len(entry["problems"]) >= 1, run.describe()
    else:
        assert summary.fullmatch(run.stderr.rstrip("\n")), run.describe()
    render_everything(doc, "check", user)
    return doc  # type: ignore[no-any-return]


def check_file(path: Path) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """Run both commands on one file and check the contract; returns both documents."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    file_lines = 1 + sum(text.count(brk) for brk in YAML_LINE_BREAKS)
    recommend = invoke("recommend", str(path), "--format", "json")
    report = check_recommend(recommend, path, file_lines)
    check = invoke("check", str(path), "--format", "json")
    check_doc = check_check(check, path, file_lines)
    (entry,) = check_doc["files"]
    if currently_in_test_context():  # --hypothesis-show-statistics tallies the outcomes
        event(f"recommend exit {recommend.exit_code}, check exit {check.exit_code}")
    if report is None:
        assert entry["status"] == "error" and entry["report"] is None, check.describe()
        assert check.stderr.splitlines()[:-1] == recommend.stderr.splitlines()[:-1], (
            "recommend and check report different problems\n" + recommend.describe()
            + "\n" + check.describe())
    else:
        # check skips the boundary search, and with it the knife edges read off the boundaries
        expected = {k: v for k, v in report.items() if k != "boundaries"}
        expected["decision"] = {k: v for k, v in report["decision"].items()
                                if k != "knife_edges"}
        assert "knife_edges" in report["decision"], "recommend searched no knife edges"
        assert entry["report"] == expected, "check's report differs from recommend's"
        if check.exit_code == 2:  # evaluated, but nothing to gate
            assert "deployed" not in report, check.describe()
            assert [p["key"] for p in entry["problems"]] == ["deployment"], check.describe()
    return report, check_doc
