"""``pd-advisor sweep WORKLOAD --vary KEY=SPEC``: the verdict across many design points.

One ``--vary`` is a line (per point: verdict, goodput per GPU of both architectures, rounding
loss, KV link utilisation, failing preconditions; and the crossover, the smallest value with
a ``disaggregate`` verdict); two make a grid (a verdict map). SPEC is a list (``8,16,32``), a
range (``8:4096``: every integer for integer keys, 101 points otherwise; ``A:B:N`` for N
points) or a log range (``8:4096:log``, 64 points; ``A:B:log:N``). Keys: see
``advisor.core.analysis.keys.KEYS`` (``pd-advisor sweep --help`` lists them).

The report goes to stdout (or ``-o FILE``) as a table, JSON or CSV; ``--plot FILE.png`` also
draws it (needs the ``plot`` extra). A progress bar appears on stderr (a terminal only) when a
sweep runs longer than about a second. Exit codes: 0 swept, 2 could not (bad input or SPEC,
matplotlib missing for ``--plot``).
"""

from __future__ import annotations

import enum
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Self

import typer

from advisor.cli.output import (
    debug_enabled,
    fail,
    fail_with_problems,
    refuse_input_as_output,
    refuse_same_outputs,
    shown,
    terminal_settings,
    write_file,
    write_output,
)
from advisor.cli.recommend_cmd import NO_CACHE_HELP
from advisor.usecases.result_cache import (
    MAX_ENTRY_BYTES,
    entry_key,
    lookup,
    open_cache,
    recorded_reads,
    store,
    trim,
)

if TYPE_CHECKING:
    from rich.progress import Progress

PROGRESS_AFTER_S = 1.0
PROFILES_HELP = ("Extra profile directory (gpus/, interconnects/, models/); repeatable. "
                 "Searched before $PD_ADVISOR_PROFILES and the built-in profiles.")
KEYS_HELP = ("KEY=SPEC; repeat once for a grid. Keys: cluster.gpus, traffic.rate_rps, "
             "traffic.concurrency, "
             "traffic.prompt_tokens, traffic.output_tokens, traffic.burstiness, slo.ttft_ms, "
             "slo.tpot_ms, slo.percentile, cluster.inter_node (profile ids), "
             "cluster.inter_node.bandwidth_scale. SPEC: 8,16,32 | 8:4096 | 8:4096:N | "
             "8:4096:log | 8:4096:log:N.")


class SweepFormat(str, enum.Enum):
    """``--format`` choices."""

    table = "table"
    json = "json"
    csv = "csv"


def register(app: typer.Typer) -> None:
    """Attach the ``sweep`` command to ``app``."""

    @app.command("sweep")
    def sweep_command(
        workload: Annotated[Path, typer.Argument(metavar="WORKLOAD", help="Workload YAML file.",
                                                 show_default=False)],
        vary: Annotated[list[str], typer.Option(
            "--vary", "-v", metavar="KEY=SPEC", help=KEYS_HELP, show_default=False)],
        fmt: Annotated[SweepFormat, typer.Option(
            "--format", "-f", help="Report format: table, json or csv.")] = SweepFormat.table,
        plot: Annotated[Path | None, typer.Option(
            "--plot", metavar="FILE.png", help="Also draw the sweep to a PNG (needs "
            "pip install 'pd-advisor\\[plot]').", show_default=False)] = None,
        plot_cost: Annotated[bool, typer.Option(
            "--plot-cost", help="With --plot and one --vary: plot USD per million output "
            "tokens instead of goodput per GPU (needs a GPU price: cluster.price_per_gpu_hour "
            "or the GPU profile's).")] = False,
        output: Annotated[Path | None, typer.Option(
            "-o", "--output", metavar="FILE", help="Write the report to FILE instead of "
            "stdout ('-' means stdout).", show_default=False)] = None,
        max_rows: Annotated[int, typer.Option(
            "--max-rows", min=2, help="Rows of a 1-D table (the ends, every verdict change "
            "and an even sample); csv/json always hold every point.")] = 40,
        progress: Annotated[bool, typer.Option(
            "--progress/--no-progress",
            help="Progress bar on stderr for sweeps longer than about a second (terminal "
                 "only).")] = True,
        profiles: Annotated[list[Path] | None, typer.Option(
            "--profiles", metavar="DIR", help=PROFILES_HELP, show_default=False)] = None,
        no_cache: Annotated[bool, typer.Option("--no-cache", help=NO_CACHE_HELP)] = False,
    ) -> None:
        """Sweep WORKLOAD over one key (a line) or two (a verdict map)."""
        from advisor.loading.catalog import ProfileCatalog

        if not 1 <= len(vary) <= 2:
            fail("give --vary once (a line) or twice (a grid)")
        if plot is not None:
            from advisor.render.plot import PlotUnavailable, require_matplotlib

            try:
                require_matplotlib()
            except PlotUnavailable as exc:
                fail(str(exc))
        refuse_input_as_output(output, [workload])
        refuse_input_as_output(plot, [workload])
        refuse_same_outputs({"-o": output, "--plot": plot})
        catalog = ProfileCatalog(extra_dirs=profiles or [])
        # the table states how long the sweep took: only CSV and JSON are cached
        cache = open_cache(catalog.search_dirs, enabled=not no_cache and plot is None
                           and fmt is not SweepFormat.table)
        width, color = terminal_settings(output is None or str(output) == "-")
        key = entry_key(cache, "sweep", workload, {
            "vary": vary, "format": fmt.value, "max_rows": max_rows, "width": width,
            "color": color})
        hit = lookup(cache, key)
        if isinstance(hit, dict) and isinstance(hit.get("text"), str):  # the text, as written
            write_output(hit["text"], output, inputs=[workload])
            return
        with recorded_reads() as log:
            result, current = _swept(workload, catalog, vary, plot, plot_cost, progress)
        image = None
        if plot is not None:  # drawn before anything is written: a failure leaves no file
            from advisor.render.plot import sweep_png

            try:
                image = sweep_png(result, current, cost=plot_cost)
            except Exception as exc:  # exit 2, never a traceback
                if debug_enabled():
                    raise
                fail(f"cannot draw {shown(plot)}: internal error: {type(exc).__name__}: {exc} "
                     "(run with --debug for the traceback)")
        text = _render(result, str(workload), current, fmt, output, max_rows)
        kept: list[str] = []
        write_output(_kept(text, kept) if key is not None else text, output, inputs=[workload])
        if kept and store(cache, key, {"text": "".join(kept)}, log):
            trim(cache)
        if plot is not None and image is not None:
            write_file(image, plot)


def _swept(workload: Path, catalog: Any, vary: list[str], plot: Path | None, plot_cost: bool,
           progress: bool) -> tuple[Any, dict[str, Any]]:
    """Load WORKLOAD and sweep it: the result and the current value of each key."""
    from advisor.core.analysis.keys import SweepError, current_value
    from advisor.core.analysis.sweep import sweep
    from advisor.loading.errors import InputError
    from advisor.loading.resolve import load_scenario
    from advisor.loading.sweep_spec import axis_from_vary

    try:
        scenario = load_scenario(workload, catalog)
    except InputError as exc:
        fail_with_problems(workload, exc.problems, "nothing swept")
    if plot_cost and (plot is None or len(vary) != 1
                      or scenario.cluster.usd_per_gpu_hour is None):
        fail("--plot-cost needs --plot, one --vary, and a GPU price (set "
             "cluster.price_per_gpu_hour in the workload, or price_per_gpu_hour_usd in the "
             "GPU profile)")
    try:
        axes = [axis_from_vary(text, catalog.link) for text in vary]
        current = {a.key: current_value(scenario, a.key) for a in axes}
        with _ProgressBar(progress) as bar:
            result = sweep(scenario, axes, progress=bar.update, workload=scenario.name)
    except (ValueError, SweepError) as exc:
        fail(f"{shown(workload)}: {exc}")
    except typer.Exit:
        raise
    except Exception as exc:  # exit 2, never a traceback
        if debug_enabled():
            raise
        fail(f"internal error: {type(exc).__name__}: {exc} "
             "(run with --debug for the traceback)")
    return result, current


def _kept(text: str | Iterable[str], kept: list[str]) -> Iterable[str]:
    """``text``'s pieces, collected in ``kept`` while they fit a cache entry (else ``kept``
    is emptied: too large to store)."""
    size = 0
    for piece in [text] if isinstance(text, str) else text:
        size += len(piece)
        if size <= MAX_ENTRY_BYTES:
            kept.append(piece)
        elif kept:
            kept.clear()
        yield piece

def _render(result: Any, workload: str, current: dict[str, Any], fmt: SweepFormat,
            output: Path | None, max_rows: int) -> str | Iterable[str]:
    """The output text; CSV and JSON as a stream of pieces (memory independent of the
    number of design points, #21)."""
    from advisor.render import sweep_report as rep

    if fmt is SweepFormat.csv:
        return rep.csv_chunks(result)
    if fmt is SweepFormat.json:
        return rep.json_chunks(result, workload, current)
    doc = rep.sweep_document(result, workload, current, points=False)
    width, color = terminal_settings(output is None or str(output) == "-")
    return rep.render_table(result, doc, width=width, color=color, max_rows=max_rows)


class _ProgressBar:
    """A rich progress bar on stderr that appears once a sweep has run ~1 s (terminal only)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self._progress: Progress | None = None
        self._task: Any = None
        self._start = time.monotonic()

    def __enter__(self) -> Self:
        self._start = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def update(self, done: int, total: int) -> None:
        """``progress(done, total)`` callback of :func:`advisor.core.analysis.sweep.sweep`."""
        if not self.enabled:
            return
        if self._progress is None:
            if time.monotonic() - self._start < PROGRESS_AFTER_S or done >= total:
                return
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(TextColumn("sweeping"), BarColumn(), MofNCompleteColumn(),
                                      TimeElapsedColumn(), TimeRemainingColumn(),
                                      console=Console(stderr=True), transient=True)
            self._progress.start()
            self._task = self._progress.add_task("sweep", total=total)
        self._progress.update(self._task, completed=done)
