"""Discrete-event simulation of a serving plan, to check the analytic model's percentiles.

``simulate(scenario, mode, requests, seed)`` draws a request trace (renewal arrivals with the
workload's rate and burstiness, lengths from its distributions, phases in order), runs it on
the plan — by default the analytic model's best plan for the mode — and returns a frozen
:class:`SimulationResult` with the simulated figures beside the analytic ones for the same
plan. Step durations come from ``Instance.step_time_s`` (cached: see ``steptime``), so the
model and the simulation differ only in the queueing and batching approximations.

No I/O: progress is reported through an optional ``progress(done, total)`` callable.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from advisor.core.results import ModelResult
from advisor.core.scenario import Scenario
from advisor.core.simulate.analytic import QUANTILES, AnalyticPrediction, predict
from advisor.core.simulate.arrivals import Trace, draw_trace
from advisor.core.simulate.colocated_sim import run_colocated
from advisor.core.simulate.disaggregated_sim import run_disaggregated
from advisor.core.simulate.metrics import LittleCheck, RawRun, hist_quantile, little_check
from advisor.core.simulate.plan import (
    MODES,
    ColocatedSimPlan,
    Deployment,
    DisaggregatedSimPlan,
    Mode,
    Plan,
    PlanError,
    build_deployment,
    default_plan,
)
from advisor.core.simulate.steptime import StepTimes

__all__ = ["MODES", "ColocatedSimPlan", "Compared", "DisaggregatedSimPlan", "LittleCheck", "Mode",
           "PhaseStats", "Plan", "PlanError", "SimulationResult", "TokenGaps", "simulate"]

DEFAULT_WARMUP = 0.05
"""Share of the first requests left out of the percentiles (the system starts empty)."""
PERCENTILES = tuple(q * 100.0 for q in QUANTILES)
Routing = Literal["jsq", "random"]


@dataclass(frozen=True)
class Compared:
    """A simulated figure beside the analytic one."""

    simulated: float | None
    analytic: float | None

    @property
    def relative_diff(self) -> float | None:
        """(analytic − simulated) / simulated; None when either is missing."""
        if self.simulated is None or self.analytic is None or self.simulated == 0:
            return None
        return (self.analytic - self.simulated) / self.simulated


@dataclass(frozen=True)
class PhaseStats:
    """Figures for one phase (or the whole run)."""

    name: str
    requests: int
    """Requests measured (after the warm-up)."""
    rate_rps: float
    """Offered rate."""
    ttft_ms: tuple[Compared, Compared, Compared]
    """p50, p95, p99."""
    tpot_ms: tuple[Compared, Compared, Compared]
    goodput_share: float | None
    """Share of requests meeting every SLO target (None without targets)."""
    throughput_rps: Compared
    """Completions per second over the phase's arrival window; analytic = the offered rate
    (None when the model calls the point overloaded)."""
    output_tokens_per_s: float
    analytic_overloaded: bool | None
    decode_batch: Compared
    """Mean decode batch per (decode) instance: time-average of the simulation (Little's law
    on decode time) against the model's fixed point."""
    at_slo_percentile: tuple[Compared, Compared]
    """(TTFT, TPOT) in ms at the SLO's percentile."""
    analytic_meets_slo: bool | None
    """Whether the model predicts the SLO met (None without targets or analytic figures)."""


@dataclass(frozen=True)
class TokenGaps:
    """Time between consecutive output tokens of the running decodes, ms."""

    p50_ms: float | None
    p99_ms: float | None
    max_ms: float
    decode_step_ms: float
    """A decode-only step at the mean batch and context (the no-interference gap)."""


@dataclass(frozen=True)
class SimulationResult:
    """One simulated mode on one plan, beside the analytic prediction for that plan."""

    scenario: str | None
    mode: Mode
    plan: Plan
    gpus: int
    requests: int
    seed: int
    warmup: float
    slo_percentile: float
    ttft_slo_ms: float | None
    tpot_slo_ms: float | None
    phases: tuple[PhaseStats, ...]
    overall: PhaseStats
    """The whole run (analytic figures only when there is one phase)."""
    gpu_busy_share: float
    """Σ busy GPU-seconds / (GPUs × simulated time)."""
    kv_link_utilization: Compared | None
    """Disaggregated only: link busy time / (links × simulated time) against the model's U."""
    token_gaps: TokenGaps
    little: LittleCheck
    simulated_seconds: float
    steps: int
    step_cache_misses: int


def _compared(sim: float | None, analytic: float | None) -> Compared:
    return Compared(None if sim is None else float(sim), analytic)


def _pcts(values: np.ndarray) -> list[float | None]:
    if values.size == 0:
        return [None, None, None]
    return [float(x) for x in np.percentile(values, PERCENTILES)]


def _stats(name: str, rate: float, sel: np.ndarray, trace: Trace, raw: RawRun, ttft: np.ndarray,
           tpot: np.ndarray, sc: Scenario, window: tuple[float, float],
           pred: AnalyticPrediction | None, decode_instances: int) -> PhaseStats:
    t_sel = ttft[sel]
    has_tpot = sel & ~np.isnan(tpot)
    p_sel = tpot[has_tpot]
    tt = _pcts(t_sel)
    tp = _pcts(p_sel)
    pct = sc.slo.percentile
    at_slo = (float(np.percentile(t_sel, pct)) if t_sel.size else None,
              float(np.percentile(p_sel, pct)) if p_sel.size else None)
    goodput = None
    if sc.slo.has_targets and sel.any():
        ok = np.ones(int(sel.sum()), dtype=bool)
        if sc.slo.ttft_ms is not None:
            ok &= t_sel <= sc.slo.ttft_ms
        if sc.slo.tpot_ms is not None:
            ok &= np.nan_to_num(tpot[sel], nan=0.0) <= sc.slo.tpot_ms
        goodput = float(ok.mean())
    w0, w1 = window
    span = max(w1 - w0, 1e-12)
    done_in = (raw.done_s >= w0) & (raw.done_s < w1)
    thr = float(done_in.sum()) / span
    tok = float(trace.output_tokens[done_in].sum()) / span
    # time-average decode batch: Σ decode time of the requests in the window / span / instances
    first = np.maximum(raw.first_token_s, w0)
    last = np.minimum(raw.done_s, w1)
    decode_time = float(np.clip(last - first, 0.0, None)[trace.output_tokens > 1].sum())
    batch = decode_time / span / max(decode_instances, 1)
    meets: bool | None = None
    a_tt: tuple[float | None, ...]
    a_tp: tuple[float | None, ...]
    if pred is None:
        a_tt = a_tp = (None, None, None)
        a_thr = a_batch = a_slo_ttft = a_slo_tpot = None
        over = None
    else:
        a_tt, a_tp, over = pred.ttft_ms, pred.tpot_ms, pred.overloaded
        a_thr = None if over else rate
        a_batch = pred.decode_batch
        a_slo_ttft, a_slo_tpot = pred.slo_ttft_ms, pred.slo_tpot_ms
        if sc.slo.has_targets:
            meets = not over
            if sc.slo.ttft_ms is not None:
                meets = meets and a_slo_ttft is not None and a_slo_ttft <= sc.slo.ttft_ms
            if sc.slo.tpot_ms is not None:
                meets = meets and a_slo_tpot is not None and a_slo_tpot <= sc.slo.tpot_ms
    return PhaseStats(
        name=name, requests=int(sel.sum()), rate_rps=rate,
        ttft_ms=tuple(_compared(s, a) for s, a in zip(tt, a_tt, strict=True)),  # type: ignore[arg-type]
        tpot_ms=tuple(_compared(s, a) for s, a in zip(tp, a_tp, strict=True)),  # type: ignore[arg-type]
        goodput_share=goodput, throughput_rps=Compared(thr, a_thr), output_tokens_per_s=tok,
        analytic_overloaded=over, decode_batch=Compared(batch, a_batch),
        at_slo_percentile=(_compared(at_slo[0], a_slo_ttft), _compared(at_slo[1], a_slo_tpot)),
        analytic_meets_slo=meets)


def _random_route(seed: int, n: int, pools: tuple[int, ...]) -> list[list[int]]:
    rng = np.random.default_rng([seed, 1])
    return [rng.integers(0, k, size=n).tolist() for k in pools]


def simulate(scenario: Scenario, mode: Mode, requests: int, seed: int, plan: Plan | None = None,
             progress: Callable[[int, int], None] | None = None,
             warmup: float = DEFAULT_WARMUP, model: ModelResult | None = None,
             routing: Routing = "jsq") -> SimulationResult:
    """Simulate ``requests`` requests of ``scenario`` served in ``mode`` on ``plan``.

    ``plan`` defaults to the analytic model's best plan for the mode (``model`` may pass an
    already computed ``evaluate(scenario)`` to save recomputing it). ``routing`` "random"
    sends each request to a uniformly drawn instance instead of the shortest queue (a
    diagnostic: it is the per-instance independent queue the analytic model assumes). Raises ``PlanError`` when
    there is no plan for the mode or the plan cannot run, ``ValueError`` for bad arguments.
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    if requests < 10:
        raise ValueError("simulate at least 10 requests")
    if routing not in ("jsq", "random"):
        raise ValueError(f"unknown routing {routing!r}; expected jsq or random")
    if not 0.0 <= warmup < 0.5:
        raise ValueError("warmup must be in [0, 0.5)")
    if plan is None:
        if model is None:
            from advisor.core.plan.evaluate import evaluate

            model = evaluate(scenario)
        plan = default_plan(scenario, mode, model)
    dep: Deployment = build_deployment(scenario, mode, plan)
    trace = draw_trace(scenario.phases, requests, seed)
    top_context = float((trace.prompt_tokens + trace.output_tokens).max())
    if isinstance(plan, ColocatedSimPlan):
        pool = dep.pools[0]
        steps = StepTimes(pool.instance, top_context)
        cap = max(int(scenario.model.max_context_tokens), int(trace.prompt_tokens.max()))
        route = None
        if routing == "random":
            route = _random_route(seed, trace.requests, (pool.instances,))[0]
        raw = run_colocated(trace, steps, pool.instances, pool.instance.gpus, plan.chunk_tokens,
                            pool.max_sequences, cap, progress, route)
        decode_instances = pool.instances
        decode_inst = pool.instance
    else:
        pre, dec = dep.pools
        routes = None
        if routing == "random":
            r = _random_route(seed, trace.requests, (pre.instances, dec.instances))
            routes = (r[0], r[1])
        raw = run_disaggregated(trace, dep, StepTimes(pre.instance, top_context),
                                StepTimes(dec.instance, top_context), progress, routes)
        decode_instances = dec.instances
        decode_inst = dec.instance
    if np.isnan(raw.done_s).any() or np.isnan(raw.first_token_s).any():
        raise RuntimeError("simulation ended with unfinished requests")  # a bug, never input

    arrival = trace.arrival_s
    overhead = dep.pools[0].instance.efficiency.request_overhead_s
    ttft = (raw.first_token_s - arrival + overhead) * 1000.0
    out = trace.output_tokens
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(out > 1, (raw.done_s - raw.first_token_s) / np.maximum(out - 1, 1),
                        np.nan) * 1000.0
    measured = np.arange(trace.requests) >= math.floor(warmup * trace.requests)
    end = float(raw.done_s.max())
    start = float(arrival[0])

    phases = []
    preds = []
    for idx, ph in enumerate(scenario.phases):
        in_phase = trace.phase == idx
        if not in_phase.any():
            continue
        pred = predict(dep, ph, idx, scenario.slo.quantile, routing)
        preds.append(pred)
        times = arrival[in_phase]
        window = (float(times[0]), float(times[-1]))
        phases.append(_stats(ph.name, ph.rate_rps, measured & in_phase, trace, raw, ttft, tpot,
                             scenario, window, pred, decode_instances))
    single = len(phases) == 1
    if single:
        overall = phases[0]
    else:
        total_rate = trace.requests / max(float(arrival[-1]) - start, 1e-12)
        overall = _stats("all", total_rate, measured, trace, raw, ttft, tpot, scenario,
                         (start, float(arrival[-1])), None, decode_instances)

    sim_seconds = end - start
    link = None
    if raw.links:
        util_sim = raw.link_busy_s / (raw.links * sim_seconds)
        link = Compared(util_sim, preds[0].kv_link_utilization if single else None)
    ctx = (float(trace.prompt_tokens.mean()) + float(out.mean()) / 2.0)
    mean_batch = max(overall.decode_batch.simulated or 1.0, 1.0)
    dec_step = float(decode_inst.decode_step_s(mean_batch, ctx)) * 1000.0
    p50 = hist_quantile(raw.gap_hist, 0.5)
    p99 = hist_quantile(raw.gap_hist, 0.99)
    gaps = TokenGaps(None if p50 is None else p50 * 1000.0, None if p99 is None else p99 * 1000.0,
                     raw.gap_max_s * 1000.0, dec_step)
    return SimulationResult(
        scenario=scenario.name, mode=mode, plan=plan, gpus=dep.gpus, requests=trace.requests,
        seed=seed, warmup=warmup, slo_percentile=scenario.slo.percentile,
        ttft_slo_ms=scenario.slo.ttft_ms, tpot_slo_ms=scenario.slo.tpot_ms,
        phases=tuple(phases), overall=overall,
        gpu_busy_share=raw.busy_gpu_s / (raw.gpus * sim_seconds) if sim_seconds > 0 else 0.0,
        kv_link_utilization=link, token_gaps=gaps,
        little=little_check(arrival, raw.done_s), simulated_seconds=sim_seconds,
        steps=raw.steps, step_cache_misses=raw.step_cache_misses)
