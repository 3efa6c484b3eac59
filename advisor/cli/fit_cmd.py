"""``pd-advisor fit TRACE... [-o workload.yaml]``: a workload file fitted from request logs.

Reads Mooncake/Kimi JSONL, Azure LLM inference CSV, BurstGPT CSV or ``vllm bench serve
--save-detailed`` JSON logs (``advisor.loading.traces``), fits rate, burstiness, length
distributions, phases and prefix reuse (``advisor.core.trace_fit``), and reports them (table,
JSON, or the workload YAML itself with ``--format yaml``). ``-o FILE`` writes the workload:
validated in memory exactly as ``validate`` would, written to a temporary file in the same
directory and renamed (written through into a FIFO or a device), so a reader never sees half a
file; an existing file is replaced only with
``--force``, and never when it is one of the logs. Exit codes: 0 fitted, 2 could not (every
problem of every log printed as ``path:line:col: error: ...``).
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from advisor.cli.output import (
    debug_enabled,
    fail,
    fail_with_problems,
    message,
    refuse_input_as_output,
    replaces_file,
    shown,
    write_file,
    write_output,
)
from advisor.core.limits import MAX_TIME_SCALE, MIN_TIME_SCALE
from advisor.escaping import visible

if TYPE_CHECKING:  # the loader is imported lazily, inside the command
    from advisor.core.scenario import Scenario
    from advisor.core.trace_fit import FittedTraffic
    from advisor.loading.traces import RequestLog

DEFAULT_MODEL = "llama-3.1-8b"
DEFAULT_GPU = "h100-sxm"
DEFAULT_INTER_NODE = "ib-ndr-400"


class TraceFormatChoice(str, enum.Enum):
    """``--format-trace`` choices."""

    auto = "auto"
    mooncake = "mooncake"
    azure = "azure"
    burstgpt = "burstgpt"
    vllm_bench = "vllm-bench"


class FitFormat(str, enum.Enum):
    """``--format`` choices."""

    table = "table"
    json = "json"
    yaml = "yaml"


TRACE_FORMAT_HELP = ("Log format: auto (from the first line), mooncake (JSONL), azure (CSV), "
                     "burstgpt (CSV) or vllm-bench (JSON with --save-detailed arrays).")
MIN_PHASE_HELP = ("Shortest phase (busy seconds) a fit may split off; shorter swings are load "
                  "variation, measured as burstiness.")
TIME_SCALE_HELP = ("Multiply the log's clock by X (0.5 replays it twice as fast: double the "
                   f"rate); {MIN_TIME_SCALE:g} to {MAX_TIME_SCALE:g}.")


def load_log(paths: list[Path], fmt: str, time_scale: float, outcome: str) -> RequestLog:
    """Read the logs or exit 2 with every problem."""
    from advisor.loading.errors import InputError
    from advisor.loading.traces import load_traces

    try:
        return load_traces(paths, fmt, time_scale)
    except InputError as exc:
        for problem in exc.problems:
            message(problem.format())
        count = len(exc.problems)
        fail(f"{', '.join(shown(p) for p in paths)}: {count} problem{'s' * (count != 1)}; "
             f"{outcome}")


def _validate(text: str, output: Path | None) -> Scenario:
    """The text about to be written must load as a scenario (exit 2, an internal error,
    otherwise); the scenario it loads as. Validated in memory, placed where it will be written
    (``-o``, else the working directory): nothing is written to validate it (#33: fit once
    needed a writable working directory for a temporary one)."""
    from advisor.loading.catalog import ProfileCatalog
    from advisor.loading.errors import InputError
    from advisor.loading.resolve import load_scenario_and_document

    place = output if output is not None else Path("fitted-workload.yaml")
    try:
        return load_scenario_and_document(place, ProfileCatalog(), text=text)[0]
    except InputError as exc:
        for problem in exc.problems:
            message(problem.format())
        fail("internal error: the fitted workload does not validate")


def _check_rates(log: RequestLog, fitted: FittedTraffic, paths: list[Path]) -> None:
    """Exit 2, located at the log, when a fitted rate is beyond what a workload accepts
    (``MAX_RATE_RPS``): the timestamps are not in the unit of the format (#33)."""
    from advisor.core.limits import MAX_RATE_RPS

    fastest = max(ph.rate_rps for ph in fitted.phases)
    if fastest > MAX_RATE_RPS:
        from advisor.loading.errors import InputProblem

        unit = {"mooncake": "milliseconds", "vllm-bench": "seconds",
                "burstgpt": "seconds"}.get(log.format, "the format's")
        problem = InputProblem(path=str(paths[0]), line=1, col=1, key="", message=(
            f"the requests arrive at {fastest:.3g} req/s, above the largest rate a workload "
            f"accepts ({MAX_RATE_RPS:.0e} req/s): are the timestamps in {unit}? "
            "--time-scale stretches the log's clock"))
        fail_with_problems(paths[0], [problem], "nothing fitted")


def _write_workload(text: str, output: Path | None) -> str | None:
    """Write the fitted workload to ``output`` (atomically; exit 2 when it cannot be)."""
    if output is None:
        return None
    write_file(text.encode("utf-8"), output)
    return str(output)


def _fit_metrics(paths: list[Path], interval: float | None, model: str, gpu: str,
                 gpus: int | None, name: str | None, fmt: FitFormat, output: Path | None,
                 min_phase: float) -> None:
    """``fit --metrics``: the workload from Prometheus metrics (``core.metrics_fit``)."""
    from advisor.cli.init_cmd import choose_layout
    from advisor.core.metrics_fit import fit_metrics
    from advisor.loading.catalog import ProfileCatalog, ProfileInvalidError, ProfileNotFoundError
    from advisor.loading.errors import InputError
    from advisor.loading.prom_metrics import load_metrics
    from advisor.render.fit_report import Target
    from advisor.render.metrics_report import (
        metrics_document,
        metrics_workload_yaml,
        render_metrics_table,
    )
    from advisor.usecases.metrics import predicted_latency

    try:
        series = load_metrics(paths, interval)
    except InputError as exc:
        for problem in exc.problems:
            message(problem.format())
        fail(f"{shown(', '.join(str(p) for p in paths))}: {len(exc.problems)} problem"
             f"{'s' * (len(exc.problems) != 1)}; nothing fitted")
    catalog = ProfileCatalog()
    try:
        model_spec = catalog.model(model)
        gpu_spec = catalog.gpu(gpu)
    except (ProfileNotFoundError, ProfileInvalidError) as exc:
        fail(str(exc))
    try:
        fitted = fit_metrics(series, min_phase)
    except ValueError as exc:
        fail(f"{paths[0]}: {exc}")
    sources = [str(p) for p in paths]
    try:
        count = gpus or gpu_spec.gpus_per_node
        context = min(float(model_spec.max_context_tokens),
                      max(p.prompt_stats[2] + p.output_stats[2] for p in fitted.phases))
        precision, _tp, _fits = choose_layout(catalog, model_spec, gpu_spec, count, context)
        model_ref = str(Path(model).resolve()) if "/" in model or model.lower().endswith(
            (".json", ".yaml", ".yml")) else model
        target = Target(name=name or paths[0].stem or "fitted", model_ref=model_ref,
                        gpu_ref=gpu, gpus=count, precision=precision, engine=series.engine,
                        inter_node=DEFAULT_INTER_NODE if count > gpu_spec.gpus_per_node
                        else None, context_tokens=int(model_spec.max_context_tokens))
        text = metrics_workload_yaml(fitted, sources, target)
        scenario = _validate(text, output)
        prediction = predicted_latency(scenario)
    except typer.Exit:
        raise
    except Exception as exc:
        if debug_enabled():
            raise
        fail(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the "
             "traceback)")
    written = _write_workload(text, output)
    if fmt is FitFormat.yaml:
        write_output(text, None)
    elif fmt is FitFormat.json:
        from advisor.render.report_json import json_text

        write_output(json_text(metrics_document(fitted, sources, written, prediction)), None)
    else:
        write_output(render_metrics_table(fitted, sources, written, prediction), None)


def register(app: typer.Typer) -> None:
    """Attach the ``fit`` command to ``app``."""

    @app.command("fit")
    def fit_command(
        traces: Annotated[list[Path], typer.Argument(
            metavar="TRACE...", help="Request logs (joined in time; see --format-trace).",
            show_default=False)],
        output: Annotated[Path | None, typer.Option(
            "-o", "--output", metavar="FILE", help="Write the fitted workload here.",
            show_default=False)] = None,
        trace_format: Annotated[TraceFormatChoice, typer.Option(
            "--format-trace", help=TRACE_FORMAT_HELP)] = TraceFormatChoice.auto,
        time_scale: Annotated[float, typer.Option(
            "--time-scale", metavar="X", min=MIN_TIME_SCALE, max=MAX_TIME_SCALE,
            help=TIME_SCALE_HELP)] = 1.0,
        model: Annotated[str, typer.Option(
            "--model", metavar="ID", help="Model of the written workload.")] = DEFAULT_MODEL,
        gpu: Annotated[str, typer.Option(
            "--gpu", metavar="ID", help="GPU of the written workload.")] = DEFAULT_GPU,
        gpus: Annotated[int | None, typer.Option(
            "--gpus", metavar="N", min=1, max=100_000, show_default=False,
            help="GPUs of the written workload (default: one node).")] = None,
        name: Annotated[str | None, typer.Option(
            "--name", help="Workload name (default: the first log's file name).",
            show_default=False)] = None,
        fmt: Annotated[FitFormat, typer.Option(
            "--format", "-f", help="Report: table, json, or the workload yaml.")
                       ] = FitFormat.table,
        force: Annotated[bool, typer.Option("--force", help="Replace an existing -o file.")
                         ] = False,
        min_phase: Annotated[float, typer.Option(
            "--min-phase", metavar="SECONDS", min=1.0, max=1e7, help=MIN_PHASE_HELP)
                             ] = 600.0,
        metrics: Annotated[bool, typer.Option(
            "--metrics", help="The files are Prometheus metrics of vLLM or SGLang: /metrics "
                              "scrapes (text, one per file, in time order) or a query_range "
                              "JSON export.")] = False,
        interval: Annotated[float | None, typer.Option(
            "--interval", metavar="SECONDS", min=1e-3, max=1e7, show_default=False,
            help="With --metrics: seconds between consecutive scrapes (when the samples "
                 "carry no timestamps).")] = None,
        check: Annotated[bool, typer.Option(
            "--check", help="Replay the log on the recommended plan and print the "
                            "analytic-vs-replay table (p50/p95/p99 TTFT and TPOT).")] = False,
    ) -> None:
        """Fit a workload (rate, burstiness, lengths, phases, prefix reuse) from request logs."""
        import math

        from advisor.cli.init_cmd import choose_layout
        from advisor.loading.catalog import (
            ProfileCatalog,
            ProfileInvalidError,
            ProfileNotFoundError,
        )
        from advisor.render.fit_report import (
            LogInfo,
            Target,
            check_document,
            fit_document,
            render_check_table,
            render_fit_table,
            workload_yaml,
        )
        from advisor.usecases.replay import fit_log, replay_on_recommended

        if not math.isfinite(time_scale):
            fail("--time-scale must be a finite number")
        if output is not None:
            refuse_input_as_output(output, traces)
            if replaces_file(output) and not force:
                fail(f"{shown(output)} exists; pass --force to replace it or -o to write elsewhere")
        if metrics:
            if check:
                fail("--check replays a request log; metrics hold no requests to replay")
            _fit_metrics(traces, interval, model, gpu, gpus, name, fmt, output, min_phase)
            return
        log = load_log(traces, trace_format.value, time_scale, "nothing fitted")
        if float(log.arrival_s[-1]) <= 0.0:
            fail(f"{shown(traces[0])}: every request has the same timestamp; nothing to fit a "
                 "rate to")
        catalog = ProfileCatalog()
        try:
            model_spec = catalog.model(model)
            gpu_spec = catalog.gpu(gpu)
        except (ProfileNotFoundError, ProfileInvalidError) as exc:
            fail(str(exc))
        try:
            fitted = fit_log(log, min_phase)
            _check_rates(log, fitted, traces)
            count = gpus or gpu_spec.gpus_per_node
            context = min(float(model_spec.max_context_tokens),
                          max(p.prompt.p95 + p.output.p95 for p in fitted.phases))
            precision, _tp, _fits = choose_layout(catalog, model_spec, gpu_spec, count, context)
            model_ref = model
            if "/" in model or model.lower().endswith((".json", ".yaml", ".yml")):
                model_ref = str(Path(model).resolve())
            inter = DEFAULT_INTER_NODE if count > gpu_spec.gpus_per_node else None
            target = Target(name=name or visible(traces[0].stem) or "fitted",
                            model_ref=model_ref,
                            gpu_ref=gpu, gpus=count, precision=precision, engine="vllm",
                            inter_node=inter, context_tokens=int(model_spec.max_context_tokens))
            info = LogInfo(paths=log.paths, format=log.format, time_scale=time_scale,
                           start_epoch_s=log.start_epoch_s, block_tokens=log.block_tokens)
            try:
                text = workload_yaml(fitted, info, target)
            except ValueError as exc:  # a value with no YAML form (not UTF-8 text)
                fail(f"cannot write the workload: {exc}")
            scenario = _validate(text, output)
            checked = replay_on_recommended(scenario, log, fitted) if check else None
        except typer.Exit:
            raise
        except Exception as exc:
            if debug_enabled():
                raise
            fail(f"internal error: {type(exc).__name__}: {exc} "
                 "(run with --debug for the traceback)")
        written = _write_workload(text, output)
        if fmt is FitFormat.yaml:
            write_output(text, None)
            if checked is not None:  # the workload on stdout, the check beside it
                message(render_check_table(*checked).rstrip("\n"))
        elif fmt is FitFormat.json:
            from advisor.render.report_json import json_text

            doc = fit_document(fitted, info, written)
            if checked is not None:
                doc["check"] = check_document(*checked)
            write_output(json_text(doc), None)
        else:
            table = render_fit_table(fitted, info, written)
            if checked is not None:
                table += "\n" + render_check_table(*checked)
            write_output(table, None)
