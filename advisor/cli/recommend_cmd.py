"""``pd-advisor recommend WORKLOAD``: chunked prefill or disaggregation, with the numbers.

The report goes to stdout (or ``-o FILE``; ``-`` is stdout) in the ``--format`` chosen
(default ``table``, or ``$PD_ADVISOR_FORMAT`` when it names one of recommend's formats: a
CI job may set a ``check``-only one, such as ``github``, for both commands); diagnostics go
to stderr. Input problems are
all printed as ``path:line:col: error: key: message`` and exit 2; otherwise the exit code is
0, even when no plan meets the SLOs (the report says so first; ``check`` is the gate).

The work itself is ``advisor.usecases.recommend.build_file_report``; the helpers here
(terminal settings, writing the output) are shared with ``check``. Heavy modules (numpy,
pydantic, rich) are imported inside the functions so that ``pd-advisor --help`` stays fast.
"""

from __future__ import annotations

import enum
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from advisor.cli.output import (  # noqa: F401 - re-exported for check_cmd
    DEFAULT_WIDTH,
    debug_enabled,
    fail,
    fail_with_problems,
    message,
    refuse_input_as_output,
    refuse_same_outputs,
    shown,
    terminal_settings,
    write_file,
    write_file_atomically,
    write_output,
)
from advisor.render.formats import (  # light: enums only
    Emit,
    Figure,
    Format,
    RecommendFormat,
)

if TYPE_CHECKING:
    from advisor.loading.catalog import ProfileCatalog
    from advisor.render.document import Document

EXIT_OK = 0

FORMAT_ENV = "PD_ADVISOR_FORMAT"

PROFILES_HELP = ("Extra profile directory (gpus/, interconnects/, models/); repeatable. "
                 "Searched before $PD_ADVISOR_PROFILES and the built-in profiles.")
OUTPUT_HELP = "Write the report to FILE instead of stdout ('-' means stdout)."
NO_CACHE_HELP = ("Neither read nor write the result cache ($PD_ADVISOR_CACHE_DIR, else "
                 "$XDG_CACHE_HOME/pd-advisor, else ~/.cache/pd-advisor; "
                 "PD_ADVISOR_NO_CACHE=1 turns it off too).")


def open_result_cache(catalog: ProfileCatalog, enabled: bool) -> Any:
    """The command's result cache (``usecases/result_cache.py``); trimmed at exit."""
    from advisor.usecases.result_cache import open_cache

    return open_cache(catalog.search_dirs, enabled=enabled)


# --------------------------------------------------------------------------- shared helpers
def catalog_for(profiles: list[Path]) -> ProfileCatalog:
    """The profile catalog: ``--profiles`` dirs, then ``$PD_ADVISOR_PROFILES``, then built-ins."""
    from advisor.loading.catalog import ProfileCatalog

    return ProfileCatalog(extra_dirs=profiles)


def render_output(doc: Document, fmt: Format, output: Path | None,
                  figure: Figure | None = None) -> str:
    """Render ``doc`` for stdout or a file."""
    from advisor.render.formats import render

    to_stdout = output is None or str(output) == "-"
    width, color = terminal_settings(to_stdout)
    # SARIF locations are relative to the working directory (%SRCROOT%, the repository root
    # in a CI job)
    return render(doc, fmt, width=width, color=color, srcroot=os.getcwd(), figure=figure)


class RecommendOutput(str, enum.Enum):
    """``recommend --format`` choices: the report formats, or ``none`` (only ``--emit``)."""

    table = RecommendFormat.table.value
    json = RecommendFormat.json.value
    markdown = RecommendFormat.markdown.value
    html = RecommendFormat.html.value
    none = "none"


def shows_boundaries(fmt: RecommendOutput) -> bool:
    """Whether the output shows the verdict boundaries and knife edges, so that they are
    searched (#34): every report format does (``render.view``'s sections, the JSON's
    ``boundaries`` and ``decision.knife_edges``); ``none`` prints no report, and neither
    ``--emit`` (the recommended plan) nor ``--plot`` (the model's curves) reads them."""
    return fmt is not RecommendOutput.none


def _check_plot(plot: Path) -> str:
    """``--plot``'s format (png or svg); exit 2 with a clear message before any work when
    the name or matplotlib is wrong."""
    from advisor.render.plot import PlotUnavailable, require_matplotlib
    from advisor.render.report_plot import figure_format

    try:
        fmt = figure_format(str(plot))
        require_matplotlib()
    except (ValueError, PlotUnavailable) as exc:
        fail(str(exc))
    return fmt


def _figure(rec: Any, fmt: RecommendOutput, plot: Path | None, plot_fmt: str,
            output: Path | None) -> Figure:
    """Draw ``--plot`` and the HTML report's SVG; the :class:`Figure` the renderers get (its
    path relative to where the report is written)."""
    if rec.figure is None:  # the table, JSON and markdown reports: no plotting code loaded
        return Figure()
    from advisor.cli.output import link_from
    from advisor.render.plot import INSTALL_HINT, PlotUnavailable
    from advisor.render.report_plot import render_figure, svg_for_html

    if plot is not None:
        write_file(render_figure(rec.figure, rec.report, plot_fmt), plot)
    link = None if plot is None else link_from(output, plot)
    if fmt is not RecommendOutput.html:
        return Figure(path=link)
    try:
        svg = svg_for_html(render_figure(rec.figure, rec.report, "svg"))
    except PlotUnavailable:
        return Figure(path=link,
                      note=f"The figure needs matplotlib, which is not installed: {INSTALL_HINT}")
    return Figure(svg=svg, path=link)


def _cached(workload: Path, profiles: list[Path], fmt: RecommendOutput, no_cache: bool
            ) -> tuple[Any, Figure]:
    """The report (and the HTML report's figure) through the result cache."""
    from advisor.usecases.recommend import cached_report
    from advisor.usecases.result_cache import trim

    catalog = catalog_for(profiles)
    cache = open_result_cache(catalog, not no_cache)

    def svg(rec: Any) -> tuple[str | None, str | None]:
        figure = _figure(rec, fmt, None, "", None)
        return figure.svg, figure.note

    payload, _ = cached_report(workload, catalog, cache,
                               svg if fmt is RecommendOutput.html else None,
                               boundaries=shows_boundaries(fmt))
    if cache.stored:
        trim(cache)
    if fmt is not RecommendOutput.html:
        return payload["report"], Figure()
    return payload["report"], Figure(svg=payload["svg"], note=payload["note"])


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
                 "schema_version 1), markdown (PR comments), html (one self-contained file "
                 "for design reviews, with the figure when matplotlib is installed) or none "
                 "(no report: only the --emit commands, the --plot figure, or nothing but "
                 "the exit code). Default also from "
                 f"${FORMAT_ENV} when it names one of these.")
                       ] = None,
        emit: Annotated[Emit | None, typer.Option(
            "--emit", show_default=False,
            help="After the report, print what deploys the recommended plan: a launch "
                 "script (vllm, sglang) or Kubernetes manifests (dynamo: a Dynamo "
                 "DynamoGraphDeployment, lws: LeaderWorkerSets and a router, kserve: a KServe "
                 "LLMInferenceService, llm-d: llm-d-modelservice Helm values); trtllm is "
                 "refused, with the reason.")] = None,
        output: Annotated[Path | None, typer.Option(
            "-o", "--output", metavar="FILE", help=OUTPUT_HELP, show_default=False)] = None,
        profiles: Annotated[list[Path] | None, typer.Option(
            "--profiles", metavar="DIR", help=PROFILES_HELP, show_default=False)] = None,
        plot: Annotated[Path | None, typer.Option(
            "--plot", metavar="FILE.png|FILE.svg", show_default=False,
            help="Also draw the figure: TTFT/TPOT against load with the SLOs, the P:D split, "
                 "the TTFT in parts, goodput per phase (needs pip install "
                 "'pd-advisor\\[plot]').")] = None,
        no_cache: Annotated[bool, typer.Option("--no-cache", help=NO_CACHE_HELP)] = False,
    ) -> None:
        """Recommend chunked prefill on a colocated pool or prefill/decode disaggregation.

        Exit codes: 0 evaluated (even when no plan meets the SLOs; the report says so
        first), 2 could not evaluate (every input problem is printed as path:line:col).
        """
        from advisor.loading.errors import InputError
        from advisor.usecases.recommend import build_recommendation, internal_error

        if fmt is None:
            from_env = os.environ.get(FORMAT_ENV, "").strip().lower()
            fmt = next((f for f in RecommendOutput if f.value == from_env),
                       RecommendOutput.table)
        refuse_input_as_output(output, [workload])
        refuse_input_as_output(plot, [workload])
        refuse_same_outputs({"-o": output, "--plot": plot})
        plot_fmt = _check_plot(plot) if plot is not None else ""
        try:
            if emit is None and plot is None:  # the report alone: through the result cache
                report, figure = _cached(workload, profiles or [], fmt, no_cache)
            else:
                rec = build_recommendation(workload, catalog_for(profiles or []),
                                           boundaries=shows_boundaries(fmt),
                                           figure=plot is not None
                                           or fmt is RecommendOutput.html)
                report, document = rec.report, rec.document
                figure = _figure(rec, fmt, plot, plot_fmt, output)
        except InputError as exc:
            fail_with_problems(workload, exc.problems, "nothing evaluated")
        except typer.Exit:  # a located failure already reported (an unwritable --plot)
            raise
        except Exception as exc:  # exit 2, never a traceback
            if debug_enabled():
                raise
            fail(internal_error(exc))
        text = ("" if fmt is RecommendOutput.none
                else render_output(report, Format(fmt.value), output, figure))
        if emit is not None:
            from advisor.usecases.emit import emit_text
            from advisor.usecases.launch import LaunchError

            data = document.data if isinstance(document.data, dict) else {}  # emit: computed
            try:
                text += ("\n" if text else "") + emit_text(
                    report, emit, data.get("model"), workload, catalog_for(profiles or []))
            except LaunchError as exc:
                fail(f"{shown(workload)}: {exc}")
        write_output(text, output, inputs=[workload])
        if not report["slo_met"]:
            message(f"pd-advisor: {shown(workload)}: no plan meets the SLOs (see the report)")
