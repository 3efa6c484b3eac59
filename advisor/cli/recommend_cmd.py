"""``pd-advisor recommend WORKLOAD``: chunked prefill or disaggregation, with the numbers.

The report goes to stdout (or ``-o FILE``; ``-`` is stdout) in the ``--format`` chosen
(default ``table``, or ``$PD_ADVISOR_FORMAT``); diagnostics go to stderr. Input problems are
all printed as ``path:line:col: error: key: message`` and exit 2; otherwise the exit code is
0, even when no plan meets the SLOs (the report says so first; ``check`` is the gate).

The helpers here (loading and evaluating one file, terminal settings, writing the output)
are shared with ``check``. Heavy modules (numpy, pydantic, rich) are imported inside the
functions so that ``pd-advisor --help`` stays fast.
"""

from __future__ import annotations

import enum
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from advisor.cli.output import (  # noqa: F401 - re-exported for check_cmd
    DEFAULT_WIDTH,
    debug_enabled,
    fail,
    fail_with_problems,
    terminal_settings,
    write_output,
)
from advisor.render.formats import EmitEngine, Format, RecommendFormat  # light: enums only

if TYPE_CHECKING:
    from advisor.loading.catalog import ProfileCatalog
    from advisor.loading.yaml_source import YamlDocument

EXIT_OK = 0

FORMAT_ENV = "PD_ADVISOR_FORMAT"

PROFILES_HELP = ("Extra profile directory (gpus/, interconnects/, models/); repeatable. "
                 "Searched before $PD_ADVISOR_PROFILES and the built-in profiles.")
OUTPUT_HELP = "Write the report to FILE instead of stdout ('-' means stdout)."


# --------------------------------------------------------------------------- shared helpers
def internal_error(exc: BaseException) -> str:
    """One line describing an unexpected exception (the traceback needs ``--debug``)."""
    return (f"internal error: {type(exc).__name__}: {exc} "
            "(run with --debug for the traceback)")


def catalog_for(profiles: list[Path]) -> ProfileCatalog:
    """The profile catalog: ``--profiles`` dirs, then ``$PD_ADVISOR_PROFILES``, then built-ins."""
    from advisor.loading.catalog import ProfileCatalog

    return ProfileCatalog(extra_dirs=profiles)


def build_file_report(path: Path, catalog: ProfileCatalog, display: str | None = None,
                      boundaries: bool = True) -> tuple[dict[str, Any], YamlDocument]:
    """Load, evaluate and assess one workload; return its report and parsed YAML.

    ``display`` is the path shown in the report (default: the path as given);
    ``boundaries`` adds the verdict boundaries (``check`` skips them). Raises
    ``InputError`` for anything wrong with the file or the profiles it names.
    """
    from advisor.core.boundaries import verdict_boundaries
    from advisor.core.evaluate import evaluate
    from advisor.core.rules import assess
    from advisor.loading.resolve import load_scenario_and_document
    from advisor.render.report_json import build_report

    scenario, document = load_scenario_and_document(path, catalog)
    data = path.read_bytes()
    model = evaluate(scenario)
    assessment = assess(scenario, model)
    bounds = verdict_boundaries(scenario, model) if boundaries else None
    shown = str(path) if display is None else display
    return build_report(scenario, assessment, shown, data, bounds), document


def locator(document: YamlDocument) -> Any:
    """``dotted key -> (line, col)`` in ``document``, pointing at the key itself (1:1 if absent)."""

    def locate(key: str) -> tuple[int, int]:
        if not key:
            return (1, 1)
        loc = tuple(int(part) if part.isdigit() else part for part in key.split("."))
        return document.locate(loc, at_key=True)

    return locate


def render_output(doc: dict[str, Any], fmt: Format, output: Path | None) -> str:
    """Render ``doc`` for stdout or a file."""
    from advisor.render.formats import render

    to_stdout = output is None or str(output) == "-"
    width, color = terminal_settings(to_stdout)
    # SARIF locations are relative to the working directory (%SRCROOT%, the repository root
    # in a CI job)
    return render(doc, fmt, width=width, color=color, srcroot=os.getcwd())


class RecommendOutput(str, enum.Enum):
    """``recommend --format`` choices: the report formats, or ``none`` (only ``--emit``)."""

    table = RecommendFormat.table.value
    json = RecommendFormat.json.value
    markdown = RecommendFormat.markdown.value
    none = "none"


# --------------------------------------------------------------------------- command
def register(app: typer.Typer) -> None:
    """Attach the ``recommend`` command to ``app``."""

    @app.command("recommend")
    def recommend(
        workload: Annotated[Path, typer.Argument(metavar="WORKLOAD", help="Workload YAML file.",
                                                 show_default=False)],
        fmt: Annotated[RecommendOutput, typer.Option(
            "--format", "-f", envvar=FORMAT_ENV,
            help="Report format: table (for people), json (canonical, schema_version 1), "
                 "markdown (PR comments) or none (only the --emit commands).")
                       ] = RecommendOutput.table,
        emit: Annotated[EmitEngine | None, typer.Option(
            "--emit", show_default=False,
            help="After the report, print the commands that launch the recommended plan on "
                 "vllm or sglang.")] = None,
        output: Annotated[Path | None, typer.Option(
            "-o", "--output", metavar="FILE", help=OUTPUT_HELP, show_default=False)] = None,
        profiles: Annotated[list[Path] | None, typer.Option(
            "--profiles", metavar="DIR", help=PROFILES_HELP, show_default=False)] = None,
    ) -> None:
        """Recommend chunked prefill on a colocated pool or prefill/decode disaggregation.

        Exit codes: 0 evaluated (even when no plan meets the SLOs; the report says so
        first), 2 could not evaluate (every input problem is printed as path:line:col).
        """
        from advisor.loading.errors import InputError

        if fmt is RecommendOutput.none and emit is None:
            fail("--format none prints nothing without --emit vllm|sglang")
        try:
            report, document = build_file_report(workload, catalog_for(profiles or []))
        except InputError as exc:
            fail_with_problems(workload, exc.problems, "nothing evaluated")
        except Exception as exc:  # exit 2, never a traceback
            if debug_enabled():
                raise
            fail(internal_error(exc))
        text = ("" if fmt is RecommendOutput.none
                else render_output(report, Format(fmt.value), output))
        if emit is not None:
            from advisor.render.launch import LaunchError, render_launch_for_workload

            data = document.data if isinstance(document.data, dict) else {}
            try:
                text += ("\n" if text else "") + render_launch_for_workload(
                    report, emit, data.get("model"), workload)
            except LaunchError as exc:
                fail(f"{workload}: {exc}")
        write_output(text, output)
        if not report["slo_met"]:
            sys.stderr.write(f"pd-advisor: {workload}: no plan meets the SLOs "
                             "(see the report)\n")
