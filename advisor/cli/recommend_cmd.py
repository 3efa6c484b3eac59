"""``pd-advisor recommend WORKLOAD``: chunked prefill or disaggregation, with the numbers.

The report goes to stdout (or ``-o FILE``; ``-`` is stdout) in the ``--format`` chosen
(default ``table``, or ``$PD_ADVISOR_FORMAT`` when it names one of recommend's formats: a
CI job may set a ``check``-only one, such as ``github``, for both commands); diagnostics go
to stderr. Input problems are
all printed as ``path:line:col: error: key: message`` and exit 2; otherwise the exit code is
0, even when no plan meets the SLOs (the report says so first; ``check`` is the gate).

The work itself is ``advisor.usecases.recommend.build_file_report``; the helpers here
(terminal settings, writing the output) are shared with ``check``. Heavy modules (numpy, pydantic, rich) are imported inside the
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
    refuse_input_as_output,
    terminal_settings,
    write_output,
)
from advisor.render.formats import EmitEngine, Format, RecommendFormat  # light: enums only

if TYPE_CHECKING:
    from advisor.loading.catalog import ProfileCatalog

EXIT_OK = 0

FORMAT_ENV = "PD_ADVISOR_FORMAT"

PROFILES_HELP = ("Extra profile directory (gpus/, interconnects/, models/); repeatable. "
                 "Searched before $PD_ADVISOR_PROFILES and the built-in profiles.")
OUTPUT_HELP = "Write the report to FILE instead of stdout ('-' means stdout)."


# --------------------------------------------------------------------------- shared helpers
def catalog_for(profiles: list[Path]) -> ProfileCatalog:
    """The profile catalog: ``--profiles`` dirs, then ``$PD_ADVISOR_PROFILES``, then built-ins."""
    from advisor.loading.catalog import ProfileCatalog

    return ProfileCatalog(extra_dirs=profiles)


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
        fmt: Annotated[RecommendOutput | None, typer.Option(
            "--format", "-f", show_default=False,
            help="Report format: table (for people; the default), json (canonical, "
                 "schema_version 1), markdown (PR comments) or none (only the --emit "
                 f"commands). Default also from ${FORMAT_ENV} when it names one of these.")
                       ] = None,
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
        from advisor.usecases.recommend import build_file_report, internal_error

        if fmt is None:
            from_env = os.environ.get(FORMAT_ENV, "").strip().lower()
            fmt = next((f for f in RecommendOutput if f.value == from_env),
                       RecommendOutput.table)
        if fmt is RecommendOutput.none and emit is None:
            fail("--format none prints nothing without --emit vllm|sglang")
        refuse_input_as_output(output, [workload])
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
            from advisor.render.launch import render_launch
            from advisor.usecases.launch import LaunchError, plan_launch_for_workload

            data = document.data if isinstance(document.data, dict) else {}
            try:
                text += ("\n" if text else "") + render_launch(plan_launch_for_workload(
                    report, emit, data.get("model"), workload))
            except LaunchError as exc:
                fail(f"{workload}: {exc}")
        write_output(text, output, inputs=[workload])
        if not report["slo_met"]:
            sys.stderr.write(f"pd-advisor: {workload}: no plan meets the SLOs "
                             "(see the report)\n")
