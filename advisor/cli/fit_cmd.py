"""``pd-advisor fit TRACE... [-o workload.yaml]``: a workload file fitted from request logs.

Reads Mooncake/Kimi JSONL, Azure LLM inference CSV, BurstGPT CSV or ``vllm bench serve
--save-detailed`` JSON logs (``advisor.loading.traces``), fits rate, burstiness, length
distributions, phases and prefix reuse (``advisor.core.trace_fit``), and reports them (table,
JSON, or the workload YAML itself with ``--format yaml``). ``-o FILE`` writes the workload:
validated exactly as ``validate`` would, written to a temporary file in the same directory and
renamed, so a reader never sees half a file; an existing file is replaced only with
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


def _validate(text: str, output: Path | None) -> None:
    """The text about to be written must load as a scenario (exit 2, an internal error,
    otherwise). Validated in memory, placed where it will be written (``-o``, else the
    working directory): nothing is written to validate it (#33: fit once needed a writable
    working directory for a temporary one)."""
    from advisor.loading.catalog import ProfileCatalog
    from advisor.loading.errors import InputError
    from advisor.loading.resolve import load_scenario_and_document

    place = output if output is not None else Path("fitted-workload.yaml")
    try:
        load_scenario_and_document(place, ProfileCatalog(), text=text)
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
        problem = InputProblem(str(paths[0]), 1, 1, "", (
            f"the requests arrive at {fastest:.3g} req/s, above the largest rate a workload "
            f"accepts ({MAX_RATE_RPS:.0e} req/s): are the timestamps in {unit}? "
            "--time-scale stretches the log's clock"))
        fail_with_problems(paths[0], [problem], "nothing fitted")


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
    ) -> None:
        """Fit a workload (rate, burstiness, lengths, phases, prefix reuse) from request logs."""
        import math

        from advisor.cli.init_cmd import choose_layout
        from advisor.core.trace_fit import fit_traffic
        from advisor.loading.catalog import (
            ProfileCatalog,
            ProfileInvalidError,
            ProfileNotFoundError,
        )
        from advisor.render.fit_report import (
            LogInfo,
            Target,
            fit_document,
            render_fit_table,
            workload_yaml,
        )

        if not math.isfinite(time_scale):
            fail("--time-scale must be a finite number")
        if output is not None:
            refuse_input_as_output(output, traces)
            if replaces_file(output) and not force:
                fail(f"{shown(output)} exists; pass --force to replace it or -o to write elsewhere")
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
            fitted = fit_traffic(log.arrival_s, log.prompt_tokens, log.output_tokens,
                                 log.prefix_hit_blocks, log.prefix_blocks, log.block_tokens,
                                 log.timestamp_step_s)
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
            _validate(text, output)
        except typer.Exit:
            raise
        except Exception as exc:
            if debug_enabled():
                raise
            fail(f"internal error: {type(exc).__name__}: {exc} "
                 "(run with --debug for the traceback)")
        written = None
        if output is not None:
            write_file(text.encode("utf-8"), output)
            written = str(output)
        if fmt is FitFormat.yaml:
            write_output(text, None)
        elif fmt is FitFormat.json:
            from advisor.render.report_json import json_text

            write_output(json_text(fit_document(fitted, info, written)), None)
        else:
            write_output(render_fit_table(fitted, info, written), None)
