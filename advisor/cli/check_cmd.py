"""``pd-advisor check FILE...``: the CI gate on each file's ``deployment:`` block.

A file is a workload (its ``deployment:`` written out, or read from Kubernetes manifests
with ``deployment: {from: ...}``) or a manifest whose ``# pd-advisor: workload=PATH`` comment
names its workload; findings about the deployment point at the manifest's lines.

A file fails (exit 1) when the deployed mode contradicts the verdict, a disaggregated
deployment violates a precondition, the declared deployment misses the SLO at the workload's
rate (overloaded included), no plan meets the SLOs at all, or a disaggregated split is more
than ``policy.split_tolerance`` away from the best integer split. A file that cannot be
evaluated — an input problem, or no ``deployment:`` block — makes the run exit 2, which wins
over 1. ``--exit-zero`` turns 1 into 0 but never hides a 2. The exit code does not depend on
``--format``.

The report goes to stdout (or ``-o``); input problems go to stderr, and the totals too unless
the report on stdout already ends with them (table, markdown, html, github): they are said
once. ``--format none`` prints no report (the totals on stderr, the exit code).
"""

from __future__ import annotations

import enum
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from advisor.cli.output import debug_enabled, refuse_input_as_output, write_output
from advisor.cli.recommend_cmd import (
    FORMAT_ENV,
    NO_CACHE_HELP,
    OUTPUT_HELP,
    PROFILES_HELP,
    catalog_for,
    open_result_cache,
    render_output,
)
from advisor.render.formats import Format  # light: enums only

if TYPE_CHECKING:
    from advisor.render.document import FileEntry


class CheckOutput(str, enum.Enum):
    """``check --format`` choices: every report format, or ``none`` (only the exit code and
    the totals on stderr: a CI gate that prints nothing else)."""

    table = Format.table.value
    json = Format.json.value
    markdown = Format.markdown.value
    github = Format.github.value
    sarif = Format.sarif.value
    junit = Format.junit.value
    html = Format.html.value
    none = "none"


TOTALS_IN_REPORT = (CheckOutput.table, CheckOutput.markdown, CheckOutput.html,
                    CheckOutput.github)
"""Formats whose report ends with the totals: on stdout they are not repeated on stderr."""


class ValuesKind(str, enum.Enum):
    """``--values-kind`` choices: Helm charts whose values files ``check`` reads."""

    llm_d = "llm-d"


def _entry(path: Path, catalog: Any, values_kind: str | None, cache: Any) -> FileEntry:
    """One file's check entry, through the result cache (its ``cache`` key says whether it
    was a hit); problems are echoed to stderr."""
    from advisor.usecases.recommend import cached_check_file

    entry, problems, status = cached_check_file(path, catalog, cache, reraise=debug_enabled(),
                                                values_kind=values_kind)
    for problem in problems:
        sys.stderr.write(problem.format() + "\n")
    entry["cache"] = status
    return entry


def register(app: typer.Typer) -> None:
    """Attach the ``check`` command to ``app``."""

    @app.command("check")
    def check(
        workloads: Annotated[list[Path], typer.Argument(
            metavar="FILE...", help="Workload YAML files with a deployment: block (or "
            "deployment: {from: manifest.yaml}), or Kubernetes manifests whose "
            "'# pd-advisor: workload=PATH' comment names their workload.",
            show_default=False)],
        fmt: Annotated[CheckOutput, typer.Option(
            "--format", "-f", envvar=FORMAT_ENV,
            help="Report format: table, json, markdown (PR comment), github (annotations), "
                 "sarif (code scanning), junit, html (one self-contained page) or none (no "
                 "report: the totals on stderr and the exit code).")
                       ] = CheckOutput.table,
        output: Annotated[Path | None, typer.Option(
            "-o", "--output", metavar="FILE", help=OUTPUT_HELP, show_default=False)] = None,
        profiles: Annotated[list[Path] | None, typer.Option(
            "--profiles", metavar="DIR", help=PROFILES_HELP, show_default=False)] = None,
        values_kind: Annotated[ValuesKind | None, typer.Option(
            "--values-kind", show_default=False,
            help="Read Helm values files given on the command line as this chart's values "
                 "(llm-d: llm-d-modelservice); without it they are told apart by their keys.",
        )] = None,
        exit_zero: Annotated[bool, typer.Option(
            "--exit-zero", help="Exit 0 even when the gate fails (input errors still exit 2).",
        )] = False,
        no_cache: Annotated[bool, typer.Option("--no-cache", help=NO_CACHE_HELP)] = False,
    ) -> None:
        """Gate each workload's declared deployment against the recommendation.

        Exit codes: 0 every file passes, 1 a file fails the gate (0 with --exit-zero),
        2 a file could not be evaluated (input error or no deployment: block) — 2 wins.
        """
        from advisor.render.report_json import build_check, exit_code
        from advisor.usecases.result_cache import trim

        refuse_input_as_output(output, workloads)
        catalog = catalog_for(profiles or [])
        cache = open_result_cache(catalog, not no_cache)
        kind = values_kind.value if values_kind is not None else None
        doc = build_check([_entry(path, catalog, kind, cache) for path in workloads])
        if cache.stored:
            trim(cache)
        to_stdout = output is None or str(output) == "-"
        if fmt is not CheckOutput.none:
            write_output(render_output(doc, Format(fmt.value), output), output,
                         inputs=workloads)
        if not (to_stdout and fmt in TOTALS_IN_REPORT):  # the totals once, where they are read
            from advisor.render.text import check_totals

            sys.stderr.write(f"pd-advisor: checked {check_totals(doc)}\n")
        code = exit_code(doc, exit_zero)
        if code:
            raise typer.Exit(code)
