"""Rendering of simulation results: a JSON document and a terminal table. Pure (no I/O).

Every simulated figure stands beside the analytic model's prediction for the same plan and
their relative difference (analytic − simulated) / simulated. Figures are rounded to six
significant digits so the output of a seed is stable across platforms.

Each phase carries its ``steady_state`` (``core.simulate.steady``); a phase that did not reach
it has no goodput (JSON null, "withheld" in the table) and a warning that says why and how
many requests a steady run needs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from io import StringIO
from typing import Any

from rich import box
from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from advisor.core.simulate import (
    ColocatedSimPlan,
    Compared,
    DisaggregatedSimPlan,
    PhaseStats,
    SimulationResult,
    SteadyState,
)
from advisor.escaping import visible

SCHEMA_VERSION = 2
"""2: per-phase ``steady_state`` and ``littles_law``, ``kv_cache``, ``requests_planned``,
``sized``, ``reached``, ``stopped``, ``source``; ``warmup_share`` removed (issue #19)."""
MODE_TITLES = {
    "chunked": "colocated, chunked prefill",
    "unchunked": "colocated, unchunked prefill",
    "disaggregated": "prefill/decode disaggregation",
}
PCT_NAMES = ("p50", "p95", "p99")


def _num(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return float(f"{x:.6g}")


def _cmp(c: Compared | None) -> dict[str, float | None] | None:
    if c is None:
        return None
    return {"simulated": _num(c.simulated), "analytic": _num(c.analytic),
            "relative_diff": _num(c.relative_diff)}


def plan_dict(plan: ColocatedSimPlan | DisaggregatedSimPlan) -> dict[str, Any]:
    """The plan as plain data."""
    if isinstance(plan, ColocatedSimPlan):
        return {"kind": "colocated", "tensor_parallel": plan.tensor_parallel,
                "pipeline_stages": plan.pipeline_stages, "instances": plan.instances,
                "chunk_tokens": plan.chunk_tokens}
    return {"kind": "disaggregated",
            "prefill": {"tensor_parallel": plan.prefill_tensor_parallel,
                        "pipeline_stages": plan.prefill_pipeline_stages,
                        "instances": plan.prefill_instances},
            "decode": {"tensor_parallel": plan.decode_tensor_parallel,
                       "pipeline_stages": plan.decode_pipeline_stages,
                       "instances": plan.decode_instances},
            "prefill_batch_tokens": plan.prefill_batch_tokens}


def _little(lt: Any) -> dict[str, float | None]:
    return {"mean_in_system": _num(lt.mean_in_system),
            "arrival_rate_rps": _num(lt.arrival_rate_rps),
            "mean_time_in_system_s": _num(lt.mean_time_in_system_s),
            "window_s": _num(lt.window_s),
            "relative_error": _num(lt.relative_error)}


def steady_dict(st: SteadyState | None) -> dict[str, Any] | None:
    """A phase's steady-state judgement as plain data."""
    if st is None:
        return None
    return {"reached": st.reached, "overloaded": st.overloaded,
            "warmup_s": _num(st.warmup_s), "measured_s": _num(st.measured_s),
            "littles_law_gap": _num(st.littles_law_gap),
            "requests_needed": st.requests_needed, "completions": st.completions,
            "completions_needed": st.completions_needed, "growth": _num(st.growth),
            "reasons": list(st.reasons)}


def _phase_dict(ph: PhaseStats) -> dict[str, Any]:
    return {
        "name": ph.name,
        "requests": ph.requests,
        "rate_rps": _num(ph.rate_rps),
        "ttft_ms": {n: _cmp(c) for n, c in zip(PCT_NAMES, ph.ttft_ms, strict=True)},
        "tpot_ms": {n: _cmp(c) for n, c in zip(PCT_NAMES, ph.tpot_ms, strict=True)},
        "goodput_share": _num(ph.goodput_share),
        "throughput_rps": _cmp(ph.throughput_rps),
        "output_tokens_per_s": _num(ph.output_tokens_per_s),
        "decode_batch": _cmp(ph.decode_batch),
        "analytic_overloaded": ph.analytic_overloaded,
        "at_slo_percentile": {"ttft_ms": _cmp(ph.at_slo_percentile[0]),
                              "tpot_ms": _cmp(ph.at_slo_percentile[1])},
        "analytic_meets_slo": ph.analytic_meets_slo,
        "steady_state": steady_dict(ph.steady_state),
        "littles_law": _little(ph.little),
    }


def result_dict(res: SimulationResult) -> dict[str, Any]:
    """One simulated mode as plain data."""
    return {
        "mode": res.mode,
        "source": res.source,
        "plan": plan_dict(res.plan),
        "gpus": res.gpus,
        "router": res.router,
        "slo": {"ttft_ms": res.ttft_slo_ms, "tpot_ms": res.tpot_slo_ms,
                "percentile": res.slo_percentile},
        "phases": [_phase_dict(p) for p in res.phases],
        "overall": _phase_dict(res.overall),
        "gpu_busy_share": _num(res.gpu_busy_share),
        "kv_link_utilization": _cmp(res.kv_link_utilization),
        "token_gaps_ms": {"p50": _num(res.token_gaps.p50_ms), "p99": _num(res.token_gaps.p99_ms),
                          "max": _num(res.token_gaps.max_ms),
                          "decode_step": _num(res.token_gaps.decode_step_ms)},
        "kv_cache": {"capacity_tokens": res.kv_cache.capacity_tokens,
                     "block_tokens": res.kv_cache.block_tokens,
                     "max_num_seqs": res.kv_cache.max_num_seqs,
                     "preemptions": res.kv_cache.preemptions},
        "littles_law": _little(res.little),
        "requests": res.requests,
        "requests_planned": res.requests_planned,
        "sized": res.sized,
        "reached": res.reached,
        "stopped": res.stopped or None,
        "clipped_requests": res.clipped_requests,
        "simulated_seconds": _num(res.simulated_seconds),
        "engine_steps": res.steps,
    }


def simulation_document(workload: str, scenario: str | None, requests: int | None, seed: int,
                        results: Sequence[SimulationResult],
                        skipped: Sequence[tuple[str, str]] = (),
                        trace: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON document of a ``simulate`` run (``requests`` None: sized from the workload;
    ``skipped``: (mode, reason) without a plan; ``trace``: the replayed log, if any)."""
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kind": "simulation",
        "workload": workload,
        "scenario": scenario,
        "requests": requests,
        "seed": seed,
        "modes": [result_dict(r) for r in results],
        "skipped": [{"mode": m, "reason": why} for m, why in skipped],
    }
    if trace is not None:
        doc["trace"] = trace
    return doc


def render_json(doc: dict[str, Any]) -> str:
    """The document as indented JSON, floats rounded (``report_json.json_text``)."""
    from advisor.render.report_json import json_text

    return json_text(doc)


# ------------------------------------------------------------------------------ table
def _fmt(x: float | None, digits: int = 1) -> str:
    if x is None or not math.isfinite(x):
        return "—"
    return f"{x:,.{digits}f}"


def _diff(c: Compared | None) -> str:
    if c is None or c.relative_diff is None:
        return "—"
    return f"{c.relative_diff * 100:+.0f} %"


def plan_text(res: SimulationResult) -> str:
    """The simulated plan in a few words (`8 × TP1, chunk 4,096 tokens`)."""
    p = res.plan
    if isinstance(p, ColocatedSimPlan):
        shape = f"TP{p.tensor_parallel}" + (f"×PP{p.pipeline_stages}" if p.pipeline_stages > 1
                                             else "")
        if p.expert_parallel > 1:
            shape = f"EP{p.expert_parallel}·DPA"
        chunk = f", chunk {p.chunk_tokens:,} tokens" if p.chunk_tokens else ""
        return f"{p.instances} × {shape}{chunk}"
    pre = f"TP{p.prefill_tensor_parallel}" + (
        f"×PP{p.prefill_pipeline_stages}" if p.prefill_pipeline_stages > 1 else "")
    dec = f"TP{p.decode_tensor_parallel}" + (
        f"×PP{p.decode_pipeline_stages}" if p.decode_pipeline_stages > 1 else "")
    if p.prefill_expert_parallel > 1:
        pre = f"EP{p.prefill_expert_parallel}·DPA"
    if p.decode_expert_parallel > 1:
        dec = f"EP{p.decode_expert_parallel}·DPA"
    return f"prefill {p.prefill_instances} × {pre}, decode {p.decode_instances} × {dec}"


def _phase_table(res: SimulationResult, ph: PhaseStats, title: str) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1),
                  header_style="bold", title=title, title_justify="left")
    table.add_column("metric")
    table.add_column("simulated", justify="right")
    table.add_column("analytic", justify="right")
    table.add_column("diff", justify="right")
    for label, figs in (("TTFT", ph.ttft_ms), ("TPOT", ph.tpot_ms)):
        for name, c in zip(PCT_NAMES, figs, strict=True):
            table.add_row(f"{label} {name} (ms)", _fmt(c.simulated), _fmt(c.analytic), _diff(c))
    pct = f"p{res.slo_percentile:g}"
    if pct not in PCT_NAMES:
        for label, c in zip(("TTFT", "TPOT"), ph.at_slo_percentile, strict=True):
            table.add_row(f"{label} {pct} (ms)", _fmt(c.simulated), _fmt(c.analytic), _diff(c))
    verdict = ("" if ph.analytic_meets_slo is None
               else "overloaded" if ph.analytic_overloaded
               else f"meets {pct}" if ph.analytic_meets_slo else f"misses {pct}")
    st = ph.steady_state
    if ph.goodput_share is not None:
        table.add_row("goodput (share meeting SLOs)", f"{ph.goodput_share * 100:.1f} %",
                      verdict, "")
    elif res.ttft_slo_ms is not None or res.tpot_slo_ms is not None:
        why = "overloaded" if st is not None and st.overloaded else "withheld: not steady"
        table.add_row("goodput (share meeting SLOs)", why, verdict, "")
    table.add_row("throughput (req/s)", _fmt(ph.throughput_rps.simulated, 2),
                  _fmt(ph.throughput_rps.analytic, 2), _diff(ph.throughput_rps))
    table.add_row("output tokens/s", _fmt(ph.output_tokens_per_s, 0), "", "")
    table.add_row("decode batch per instance", _fmt(ph.decode_batch.simulated),
                  _fmt(ph.decode_batch.analytic), _diff(ph.decode_batch))
    return table


def steady_lines(ph: PhaseStats, label: str, replay: bool = False) -> list[str]:
    """Warning lines for a phase that did not reach steady state (empty when it did)."""
    st = ph.steady_state
    if st is None or st.reached:
        return []
    head = "OVERLOADED" if st.overloaded else "steady state not reached"
    lines = [f"⚠ {label}{head}: " + "; ".join(st.reasons) + "."]
    if st.overloaded:
        lines.append("  The simulated pool cannot keep up: no percentile or goodput from this "
                     "run describes it.")
    elif replay:
        lines.append(f"  No goodput or SLO verdict from this replay; a steady one needs a log "
                     f"of about {st.requests_needed:,} requests in this phase.")
    else:
        lines.append(f"  No goodput or SLO verdict from this run; a steady run needs about "
                     f"{st.requests_needed:,} requests (omit --requests to size it).")
    return lines


def _summary_table(res: SimulationResult) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    table.add_row("GPU busy share", f"{res.gpu_busy_share * 100:.1f} %")
    if res.kv_link_utilization is not None:
        c = res.kv_link_utilization
        ana = "" if c.analytic is None else f" (analytic {c.analytic * 100:.2f} %)"
        table.add_row("KV link utilisation", f"{(c.simulated or 0.0) * 100:.2f} %{ana}")
    g = res.token_gaps
    table.add_row("token gaps (ms)", f"p50 {_fmt(g.p50_ms)}, p99 {_fmt(g.p99_ms)}, "
                  f"max {_fmt(g.max_ms)} (decode step {_fmt(g.decode_step_ms)})")
    lt = res.little
    if lt.mean_time_in_system_s > 0:
        table.add_row("Little's law", f"L {lt.mean_in_system:,.2f} vs λ·W "
                      f"{lt.arrival_rate_rps * lt.mean_time_in_system_s:,.2f} "
                      f"({lt.relative_error * 100:.2f} % apart, measurement windows)")
    else:
        table.add_row("Little's law", f"L {lt.mean_in_system:,.2f}; W unknown: no request of "
                      "the measurement windows finished")
    kv = res.kv_cache
    table.add_row("KV cache", f"{kv.capacity_tokens:,} tokens per instance in "
                  f"{kv.block_tokens}-token blocks, at most {kv.max_num_seqs:,} sequences; "
                  f"{kv.preemptions:,} preemptions")
    run = (f"{res.requests:,} requests ({'sized from the workload' if res.sized else 'given'}"
           f"{'' if res.source == 'drawn' else ', replayed log'}), "
           f"{res.simulated_seconds:,.0f} s, {res.steps:,} engine steps")
    table.add_row("simulated", run)
    if res.stopped:
        table.add_row("stopped early", res.stopped)
    if res.clipped_requests:
        table.add_row("clipped", f"{res.clipped_requests:,} requests cut to the longest an "
                      "instance holds")
    return table


def result_renderables(res: SimulationResult) -> list[Any]:
    """The rich renderables of one simulated mode."""
    head = Text.assemble((f"{res.mode}", "bold underline"),
                         f" — {MODE_TITLES.get(res.mode, res.mode)}: {plan_text(res)} "
                         f"({res.gpus} GPUs)")
    parts: list[Any] = [head]
    for ph in res.phases:
        shown = visible(ph.name)
        title = (None if len(res.phases) == 1  # a table title is rich markup: escaped
                 else f"phase {escape(shown)} ({ph.rate_rps:g} req/s)")
        parts.append(_phase_table(res, ph, title or ""))
        label = "" if len(res.phases) == 1 else f"phase {shown}: "
        parts.extend(Text(line, style="bold")
                     for line in steady_lines(ph, label, res.source == "trace"))
    if len(res.phases) > 1:
        parts.append(_phase_table(res, res.overall, "whole run (no single analytic figure)"))
    parts.append(_summary_table(res))
    parts.append(Text(""))
    return parts


def render_table(workload: str, requests: int | None, seed: int,
                 results: Sequence[SimulationResult],
                 skipped: Sequence[tuple[str, str]] = (), width: int = 100,
                 color: bool = False, trace_note: str = "") -> str:
    """The terminal report as a string (``workload`` and ``trace_note`` escaped,
    :func:`advisor.escaping.visible`)."""
    buf = StringIO()
    console = Console(file=buf, width=width, color_system="standard" if color else None,
                      force_terminal=color, no_color=not color, highlight=False)
    first = results[0] if results else None
    slo = ""
    if first is not None:
        targets = []
        if first.ttft_slo_ms is not None:
            targets.append(f"TTFT ≤ {first.ttft_slo_ms:g} ms")
        if first.tpot_slo_ms is not None:
            targets.append(f"TPOT ≤ {first.tpot_slo_ms:g} ms")
        if targets:
            slo = f"; SLO {' and '.join(targets)} at p{first.slo_percentile:g}"
    if first is not None and first.source == "trace":
        size = "a replayed request log"
    elif requests is None:
        size = "requests sized from the workload"
    else:
        size = f"{requests:,} requests"
    seeded = "" if first is not None and first.source == "trace" else f", seed {seed}"
    routed = "" if first is None else f", {first.router} router on every pool"
    console.print(Text(f"Simulation of {visible(workload)}: {size}{seeded}{routed}{slo}. "
                       "diff = (analytic − simulated) / simulated.", style="bold"))
    if trace_note:  # names the log: its file name is the user's (#33)
        console.print(Text(visible(trace_note)))
    console.print()
    parts: list[Any] = []
    for res in results:
        parts.extend(result_renderables(res))
    for mode, why in skipped:
        parts.append(Text(f"{mode}: not simulated — {why}"))
    console.print(Group(*parts))
    return buf.getvalue()
