"""``pd-advisor simulate WORKLOAD``: run the discrete-event simulator beside the analytic model.

For each mode (chunked, unchunked, disaggregated; ``--mode`` repeats, default all) the
analytic model's best plan is simulated on requests drawn with ``--seed`` — as many as the
workload needs to reach steady state (``core.simulate.steady``), or ``--requests N`` (at most
``MAX_REQUESTS``) — or on a replayed request log (``--trace FILE``, with the analytic column
for the traffic fitted from the log). The report shows p50/p95/p99 TTFT and TPOT, goodput,
throughput, GPU busy share, KV link utilisation and cache, each simulated figure beside the
analytic prediction and their relative difference, and per phase whether the run reached
steady state (no goodput from one that did not). Output is deterministic for a seed. A
progress bar goes to stderr when it is a terminal. Exit codes: 0 simulated (steady or not),
2 could not (input problems, no plan for a requested mode).
"""

from __future__ import annotations

import enum
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Self

import typer

from advisor.cli.fit_cmd import (
    MIN_PHASE_HELP,
    TIME_SCALE_HELP,
    TRACE_FORMAT_HELP,
    TraceFormatChoice,
    load_log,
)
from advisor.cli.output import (
    debug_enabled,
    fail,
    fail_with_problems,
    shown,
    terminal_settings,
    write_output,
)
from advisor.core.limits import MAX_TIME_SCALE, MIN_TIME_SCALE
from advisor.core.simulate.steady import MAX_REQUESTS

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from rich.progress import Progress

PROFILES_HELP = ("Extra profile directory (gpus/, interconnects/, models/); repeatable. "
                 "Searched before $PD_ADVISOR_PROFILES and the built-in profiles.")


class SimMode(str, enum.Enum):
    """``--mode`` choices."""

    chunked = "chunked"
    unchunked = "unchunked"
    disaggregated = "disaggregated"
    all = "all"


class SimFormat(str, enum.Enum):
    """``--format`` choices."""

    table = "table"
    json = "json"


def register(app: typer.Typer) -> None:
    """Attach the ``simulate`` command to ``app``."""

    @app.command("simulate")
    def simulate_command(
        workload: Annotated[Path, typer.Argument(metavar="WORKLOAD", help="Workload YAML file.",
                                                 show_default=False)],
        requests: Annotated[int | None, typer.Option(
            "--requests", "-n", min=100, max=MAX_REQUESTS, show_default=False,
            help="Requests to simulate per mode (default: as many as steady state needs, "
                 f"at most {MAX_REQUESTS:,}).")] = None,
        seed: Annotated[int, typer.Option(
            "--seed", "-s", min=0, help="Random seed (same seed, same output).")] = 0,
        modes: Annotated[list[SimMode] | None, typer.Option(
            "--mode", "-m", help="Mode to simulate (default all); repeatable.",
            show_default=False)] = None,
        fmt: Annotated[SimFormat, typer.Option(
            "--format", "-f", help="Report format: table or json.")] = SimFormat.table,
        progress: Annotated[bool, typer.Option(
            "--progress/--no-progress",
            help="Progress bar on stderr (only when it is a terminal).")] = True,
        profiles: Annotated[list[Path] | None, typer.Option(
            "--profiles", metavar="DIR", help=PROFILES_HELP, show_default=False)] = None,
        trace: Annotated[Path | None, typer.Option(
            "--trace", metavar="FILE", show_default=False,
            help="Replay this request log instead of drawing requests.")] = None,
        trace_format: Annotated[TraceFormatChoice, typer.Option(
            "--format-trace", help=TRACE_FORMAT_HELP)] = TraceFormatChoice.auto,
        time_scale: Annotated[float, typer.Option(
            "--time-scale", metavar="X", min=MIN_TIME_SCALE, max=MAX_TIME_SCALE,
            help=TIME_SCALE_HELP)] = 1.0,
        min_phase: Annotated[float, typer.Option(
            "--min-phase", metavar="SECONDS", min=1.0, max=1e7,
            help=MIN_PHASE_HELP + " With --trace.")] = 600.0,
    ) -> None:
        """Simulate the best plans of WORKLOAD and compare them with the analytic model."""
        import math

        from advisor.core.plan.evaluate import evaluate
        from advisor.core.simulate import MODES, PlanError, simulate
        from advisor.loading.catalog import ProfileCatalog
        from advisor.loading.errors import InputError
        from advisor.loading.resolve import load_scenario
        from advisor.render.simulate_report import render_json, render_table, simulation_document

        if trace is not None and requests is not None:
            fail("--requests has no meaning with --trace: the log fixes the requests")
        if not math.isfinite(time_scale):
            fail("--time-scale must be a finite number")
        chosen = modes or [SimMode.all]
        wanted = list(MODES) if any(m is SimMode.all for m in chosen) else list(
            dict.fromkeys(m.value for m in chosen))
        try:
            scenario = load_scenario(workload, ProfileCatalog(extra_dirs=profiles or []))
        except InputError as exc:
            fail_with_problems(workload, exc.problems, "nothing simulated")
        if any(ph.prefix_cache_hit_rate > 0 for ph in scenario.phases):
            fail(f"{shown(workload)}: the simulator does not model prefix caching yet (every "
                 "prompt token would be prefilled); recommend, check and sweep do. Remove "
                 "traffic.prefix_cache_hit_rate / shared_prefix_tokens to simulate")
        if scenario.engine.speculative is not None:
            fail(f"{shown(workload)}: the simulator does not model speculative decoding yet "
                 "(each step would emit one token); recommend, check and sweep do. Remove "
                 "deployment.speculative to simulate")
        if any(ph.batch_requests for ph in scenario.phases):
            if trace is not None or requests is not None:
                fail(f"{workload}: a finite batch fixes its requests (traffic.requests); "
                     "--trace and --requests have no meaning with it")
            _simulate_batch(scenario, wanted, seed, fmt, str(workload))
            return
        replay = trace_doc = None
        note = ""
        if trace is not None:
            log = load_log([trace], trace_format.value, time_scale, "nothing simulated")
            if float(log.arrival_s[-1]) <= 0.0:
                fail(f"{shown(trace)}: every request has the same timestamp; nothing to replay")
            from advisor.usecases.replay import fit_log, replay_of

            replay, trace_doc, note = replay_of(log, fit_log(log, min_phase), scenario)
        try:
            model = evaluate(scenario)
            results, skipped = [], []
            with _ProgressBar(progress) as bar:
                for mode in wanted:
                    callback = bar(mode, replay.trace.requests if replay is not None
                                   else requests)
                    try:
                        # Ignored below: the CLI's modes are str values equal to the simulator's
                        # Mode literals.
                        results.append(simulate(scenario, mode, requests, seed,  # type: ignore[arg-type]
                                                progress=callback, model=model, replay=replay))
                    except PlanError as exc:
                        if len(wanted) == 1:
                            fail(f"{shown(workload)}: {mode}: {exc}")
                        skipped.append((mode, str(exc)))
        except typer.Exit:
            raise
        except Exception as exc:
            if debug_enabled():
                raise
            fail(f"internal error: {type(exc).__name__}: {exc} "
                        "(run with --debug for the traceback)")
        label = str(workload)
        if fmt is SimFormat.json:
            doc = simulation_document(label, scenario.name, requests, seed, results, skipped,
                                      trace_doc)
            write_output(render_json(doc), None)
        else:
            width, color = terminal_settings(True)
            write_output(render_table(label, requests, seed, results, skipped, width, color,
                                      note), None)


def _simulate_batch(scenario: Any, modes: Sequence[str], seed: int, fmt: SimFormat,
                    shown: str) -> None:
    """A finite batch simulated on each mode's plan beside the analytic model
    (``core.simulate.batch``): makespan and the batch's TTFT and TPOT percentiles."""
    from advisor.core.plan.evaluate import evaluate
    from advisor.core.simulate.batch import predict_batch, simulate_batch
    from advisor.core.simulate.plan import PlanError, build_deployment, default_plan

    phase = scenario.phases[0]
    n = int(phase.batch_requests)
    model = evaluate(scenario)
    rows: list[dict[str, Any]] = []
    for mode in modes:
        try:
            plan = default_plan(scenario, mode, model)  # type: ignore[arg-type]
            dep = build_deployment(scenario, mode, plan)  # type: ignore[arg-type]
        except PlanError as exc:
            rows.append({"mode": mode, "skipped": str(exc)})
            continue
        a = predict_batch(scenario, dep, 0, n)
        sim = simulate_batch(scenario, mode, plan, n, seed)  # type: ignore[arg-type]
        rows.append({"mode": mode, "gpus": dep.gpus, "figures": [
            ("makespan (s)", sim.makespan_s, a.makespan_s),
            *((f"TTFT {q} (ms)", sv, av) for q, sv, av in
              zip(("p50", "p95", "p99"), sim.ttft_ms, a.ttft_ms, strict=True)),
            *((f"TPOT {q} (ms)", sv, av) for q, sv, av in
              zip(("p50", "p95", "p99"), sim.tpot_ms, a.tpot_ms, strict=True)),
            ("throughput (req/s)", sim.throughput_rps, a.throughput_rps)]})
    if fmt is SimFormat.json:
        from advisor.render.report_json import json_text

        doc = {"kind": "simulation-batch", "workload": shown, "requests": n, "seed": seed,
               "modes": [{"mode": r["mode"], "skipped": r.get("skipped"), "gpus": r.get("gpus"),
                          "figures": [{"metric": m, "simulated": sv, "analytic": av}
                                      for m, sv, av in r.get("figures", [])]} for r in rows]}
        write_output(json_text(doc), None)
        return
    lines = [f"Simulation of {shown}: a finite batch of {n:,} requests at t = 0 (seed {seed}); "
             "diff = (analytic − simulated) / simulated.", ""]
    for r in rows:
        if "skipped" in r:
            lines += [f"{r['mode']}: skipped — {r['skipped']}", ""]
            continue
        lines.append(f"{r['mode']} ({r['gpus']} GPUs)")
        lines.append(f"{'metric':22s} {'simulated':>11s} {'analytic':>11s} {'diff':>6s}")
        for m, sv, av in r["figures"]:
            diff = f"{(av - sv) / sv * 100:+.0f} %" if sv else "—"
            lines.append(f"{m:22s} {sv:11,.1f} {av:11,.1f} {diff:>6s}")
        lines.append("")
    write_output("\n".join(lines), None)


class _ProgressBar:
    """A rich progress bar on stderr, one task per mode; a no-op off a terminal."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self._progress: Progress | None = None

    def __enter__(self) -> Self:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(TextColumn("simulating {task.description}"), BarColumn(),
                                      MofNCompleteColumn(), TimeElapsedColumn(),
                                      console=Console(stderr=True), transient=True)
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def __call__(self, mode: str, total: int | None) -> Callable[[int, int], None] | None:
        """A ``progress(done, total)`` callback for ``mode`` (None when disabled; the total,
        when sized from the workload, arrives with the first call)."""
        if self._progress is None:
            return None
        progress = self._progress
        task = progress.add_task(mode, total=total)

        def update(done: int, of: int) -> None:
            progress.update(task, completed=done, total=of)

        return update
