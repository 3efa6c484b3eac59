"""Discrete-event simulation of a serving plan, to check the analytic model's percentiles.

``simulate(scenario, mode)`` draws requests (renewal arrivals with the workload's rate and
burstiness, lengths from its distributions, phases in order) — or replays a request log
(``Replay``) — runs them on the plan (by default the analytic model's best plan for the mode)
and returns a frozen :class:`SimulationResult` with the simulated figures beside the analytic
ones for the same plan. Step durations come from ``Instance.step_time_s`` (cached: see
``steptime``), so the model and the simulation differ only in the queueing, batching and
memory approximations.

The run is sized from the workload (``steady``: warm-up and measurement window from each
phase's mean residence time, enough completions for the percentiles) unless ``requests`` is
given; every phase is judged for steady state, and a phase that did not reach it — too few
requests, or a pool that cannot keep up — reports no goodput. Memory stays bounded by the
requests in flight (``recorder``, ``feed``); at most ``MAX_REQUESTS`` requests per run.

No I/O: progress is reported through an optional ``progress(done, total)`` callable.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from advisor.core.results import ModelResult
from advisor.core.scenario import ROUTER_POLICIES, RouterPolicy, Scenario, TrafficPhase
from advisor.core.simulate.analytic import QUANTILES, AnalyticPrediction, predict
from advisor.core.simulate.arrivals import ArraySource, DrawnSource, Source, Trace, phase_counts
from advisor.core.simulate.colocated_sim import KvSpec, run_colocated
from advisor.core.simulate.disaggregated_sim import run_disaggregated
from advisor.core.simulate.feed import Feed
from advisor.core.simulate.metrics import GapStats, RunCounters, hist_quantile
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
    engine_block_tokens,
    engine_max_num_seqs,
)
from advisor.core.simulate.recorder import LittleCheck, Recorder, WindowFigures
from advisor.core.simulate.result import (
    Compared,
    KvCache,
    PhaseStats,
    SimulationResult,
    TokenGaps,
)
from advisor.core.simulate.steady import (
    IN_FLIGHT_LIMIT,
    MAX_REQUESTS,
    PhaseSizing,
    SteadyState,
    assess,
    size_phase,
)
from advisor.core.simulate.steptime import StepTimes

__all__ = ["MAX_REQUESTS", "MIN_REQUESTS", "MODES", "ColocatedSimPlan", "Compared",
           "DisaggregatedSimPlan", "KvCache", "LittleCheck", "Mode", "PhaseStats", "Plan",
           "PlanError", "Replay", "SimulationResult", "SteadyState", "TokenGaps", "simulate"]

MIN_REQUESTS = 10
PERCENTILES = tuple(q * 100.0 for q in QUANTILES)


@dataclass(frozen=True, kw_only=True)
class Replay:
    """A request log to replay instead of drawing requests.

    ``trace.phase`` is each request's phase, described by ``phases`` (fitted from the log:
    the analytic column and the sizing use them); ``segments`` splits the log into the
    stretches between phase changes (one measurement window each), ``segment_phase`` and
    ``segment_bounds_s`` give each stretch's phase and (start, end) in the log's seconds.
    """

    trace: Trace
    phases: tuple[TrafficPhase, ...]
    segments: np.ndarray
    segment_phase: tuple[int, ...]
    segment_bounds_s: tuple[tuple[float, float], ...]


def _residence(dep: Deployment, ph: TrafficPhase, idx: int,
               pred: AnalyticPrediction) -> tuple[float, str]:
    """Estimated mean time in the system (steady.py) and what it rests on."""
    out = max(ph.output_tokens.mean - 1.0, 0.0)
    ttft, tpot = pred.ttft_ms[0], pred.tpot_ms[0]
    if not pred.overloaded and ttft is not None and (tpot is not None or out == 0.0):
        return ttft / 1000.0 + out * (tpot or 0.0) / 1000.0, "analytic"
    pre, dec = dep.pools[0], dep.pools[-1]
    batch = max(1, dec.max_sequences[idx])
    ctx = ph.prompt_tokens.mean + ph.output_tokens.mean / 2.0
    t = (float(pre.instance.prefill_time_s(ph.prompt_tokens.mean))
         + out * float(dec.instance.decode_step_s(batch, ctx)))
    return t, "service"


def _counts(sizings: list[PhaseSizing], requests: int | None) -> tuple[list[int], list[float]]:
    """Requests and warm-up per phase: as sized, or ``requests`` split ∝ what each needs
    (a phase given fewer requests than it needs gets its warm-up cut in proportion)."""
    needed = [s.requests_needed for s in sizings]
    if requests is None:
        total = sum(needed)
        counts = needed if total <= MAX_REQUESTS else phase_counts(needed, MAX_REQUESTS)
    else:
        counts = phase_counts(needed, requests)
    warm = [s.warmup_s * min(1.0, c / max(s.requests_needed, 1))
            for s, c in zip(sizings, counts, strict=True)]
    return counts, warm


def _stats(name: str, rate: float, fig: WindowFigures, sc: Scenario,
           pred: AnalyticPrediction | None, decode_instances: int,
           steady: SteadyState | None, reached: bool) -> PhaseStats:
    tt = [fig.ttft.quantile(q) for q in QUANTILES]
    tp = [fig.tpot.quantile(q) for q in QUANTILES]
    slo_q = sc.slo.quantile
    at_slo = (fig.ttft.quantile(slo_q), fig.tpot.quantile(slo_q))
    goodput = None
    if sc.slo.has_targets and fig.completed and reached:
        goodput = fig.good / fig.completed
    span = fig.measured_s
    thr = fig.completions_in_window / span if span > 0 else 0.0
    tok = fig.output_tokens_in_window / span if span > 0 else 0.0
    if fig.mean_decode_batch is not None:
        batch = fig.mean_decode_batch / max(decode_instances, 1)
    else:
        batch = fig.decode_seconds_in_window / span / max(decode_instances, 1) if span > 0 else 0.0
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
        name=name, requests=fig.completed, rate_rps=rate,
        # Ignored below: three percentiles in, three out; tuple() of a generator is typed
        # tuple[Compared, ...].
        ttft_ms=tuple(Compared(s, a) for s, a in zip(tt, a_tt, strict=True)),  # type: ignore[arg-type]
        tpot_ms=tuple(Compared(s, a) for s, a in zip(tp, a_tp, strict=True)),  # type: ignore[arg-type]
        goodput_share=goodput, throughput_rps=Compared(thr, a_thr), output_tokens_per_s=tok,
        analytic_overloaded=over, decode_batch=Compared(batch, a_batch),
        at_slo_percentile=(Compared(at_slo[0], a_slo_ttft), Compared(at_slo[1], a_slo_tpot)),
        analytic_meets_slo=meets, steady_state=steady, little=fig.little)


def _check_args(mode: str, requests: int | None, router: str) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    if requests is not None and not MIN_REQUESTS <= requests <= MAX_REQUESTS:
        raise ValueError(f"simulate between {MIN_REQUESTS} and {MAX_REQUESTS:,} requests")
    if router not in ROUTER_POLICIES:
        raise ValueError(f"unknown router {router!r}; expected one of {', '.join(ROUTER_POLICIES)}")


def simulate(scenario: Scenario, mode: Mode, requests: int | None = None, seed: int = 0,
             plan: Plan | None = None, progress: Callable[[int, int], None] | None = None,
             model: ModelResult | None = None, router: RouterPolicy | None = None,
             replay: Replay | None = None,
             in_flight_limit: int = IN_FLIGHT_LIMIT) -> SimulationResult:
    """Simulate ``scenario`` served in ``mode`` on ``plan``.

    ``requests`` None sizes the run from the workload (module docstring); a number runs that
    many, split over the phases in proportion to what each needs. ``plan`` defaults to the
    analytic model's best plan for the mode (``model`` may pass an already computed
    ``evaluate(scenario)``). ``router`` is the policy every pool's router runs (default the
    workload's, ``Scenario.router``); the analytic column assumes the same one. ``replay``
    replays a log instead of drawing requests.
    Raises ``PlanError`` when there is no plan for the mode or the plan cannot run,
    ``ValueError`` for bad arguments.
    """
    router = scenario.router if router is None else router
    _check_args(mode, requests, router)
    if plan is None:
        if model is None:
            from advisor.core.plan.evaluate import evaluate

            model = evaluate(scenario)
        plan = default_plan(scenario, mode, model)
    sc = dataclasses.replace(scenario, router=router)
    if replay is not None:
        sc = dataclasses.replace(sc, phases=replay.phases)
    dep = build_deployment(sc, mode, plan)
    preds = [predict(dep, ph, idx, sc.slo.quantile, router) for idx, ph in enumerate(sc.phases)]
    top_q = sc.slo.quantile
    residences = [_residence(dep, ph, idx, p)
                  for idx, (ph, p) in enumerate(zip(sc.phases, preds, strict=True))]
    sizings = [size_phase(ph.rate_rps, ph.burstiness, w, basis, top_q)
               for ph, (w, basis) in zip(sc.phases, residences, strict=True)]

    source: Source
    if replay is not None:
        source = ArraySource(replay.trace, replay.segments, replay.segment_phase,
                             replay.segment_bounds_s)
        seg_warm = [sizings[p].warmup_s for p in replay.segment_phase]
        planned = replay.trace.requests
        bounds = replay.segment_bounds_s
        duration = bounds[-1][1] - bounds[0][0] if bounds else 0.0
        top_context = float((replay.trace.prompt_tokens + replay.trace.output_tokens).max())
    else:
        counts, seg_warm = _counts(sizings, requests)
        source = DrawnSource(sc.phases, counts, seed)
        planned = sum(counts)
        bounds = None
        duration = sum(c / ph.rate_rps for c, ph in zip(counts, sc.phases, strict=True))
        top_context = max(ph.prompt_tokens.upper_tokens + ph.output_tokens.upper_tokens
                          for ph in sc.phases)
    dec_pool = dep.pools[-1]
    inst = dec_pool.instance
    block = engine_block_tokens(inst)
    kv = KvSpec(capacity_blocks=max(1, dec_pool.kv_tokens // block), block_tokens=block,
                max_num_seqs=engine_max_num_seqs(inst))
    longest = int(min(float(sc.model.max_context_tokens), (kv.capacity_blocks - 1) * block))
    top_context = min(top_context, float(longest))
    overhead = dep.pools[0].instance.efficiency.request_overhead_s
    rec = Recorder(source.segment_phase, len(sc.phases), seg_warm, overhead, sc.slo.ttft_ms,
                   sc.slo.tpot_ms, duration, bounds)
    seg_res = [residences[p][0] for p in source.segment_phase]
    feed = Feed(source, rec, progress, longest, seg_res, in_flight_limit)
    gaps = GapStats()
    counters: RunCounters
    if isinstance(plan, ColocatedSimPlan):
        pool = dep.pools[0]
        cap = max(int(sc.model.max_context_tokens), longest)
        counters = run_colocated(feed, StepTimes(pool.instance, top_context), pool.instances,
                                 pool.instance.gpus, plan.chunk_tokens, kv, cap, gaps, router,
                                 seed)
        decode_instances = pool.instances
    else:
        pre, dec = dep.pools
        counters = run_disaggregated(feed, dep, StepTimes(pre.instance, top_context),
                                     StepTimes(dec.instance, top_context), kv, gaps, router,
                                     seed)
        decode_instances = dec.instances
    return _result(scenario, sc, mode, plan, dep, seed, preds, sizings, rec, feed, counters,
                   gaps, decode_instances, planned, requests is None and replay is None,
                   "trace" if replay is not None else "drawn", kv)


def _result(scenario: Scenario, sc: Scenario, mode: Mode, plan: Plan, dep: Deployment,
            seed: int, preds: list[AnalyticPrediction], sizings: list[PhaseSizing],
            rec: Recorder, feed: Feed, counters: RunCounters, gaps: GapStats,
            decode_instances: int, planned: int, sized: bool, source: str,
            kv: KvSpec) -> SimulationResult:
    phases: list[PhaseStats] = []
    reached_all = True
    weights: list[tuple[float, float, float]] = []
    for idx, ph in enumerate(sc.phases):
        segs = [s for s, p in enumerate(rec.seg_phase.tolist()) if p == idx]
        started = any(not math.isnan(rec.start[s]) for s in segs)
        if not started and not counters.stopped:
            continue  # a phase with no requests (a replayed log that never enters it)
        fig = rec.figures(idx)
        steady = assess(sizings[idx], fig, counters.stopped, feed.stop_segment in segs)
        if not started:
            steady = dataclasses.replace(steady, reasons=(
                f"not simulated: the run stopped before this phase ({counters.stopped})",))
        reached_all = reached_all and steady.reached
        phases.append(_stats(ph.name, ph.rate_rps, fig, sc, preds[idx], decode_instances,
                             steady, steady.reached))
        weights.append((float(fig.arrivals), ph.prompt_tokens.mean, ph.output_tokens.mean))
    if not phases:
        raise RuntimeError("the run measured no phase")  # a bug, never input
    if len(phases) == 1:
        overall = phases[0]
    else:
        fig = rec.figures(None)
        rate = fig.arrivals / fig.measured_s if fig.measured_s > 0 else 0.0
        overall = _stats("all", rate, fig, sc, None, decode_instances, None, reached_all)
    sim_seconds = max(counters.end_s - counters.start_s, 1e-12)
    link = None
    if counters.links:
        util_sim = counters.link_busy_s / (counters.links * sim_seconds)
        link = Compared(util_sim, preds[0].kv_link_utilization if len(phases) == 1 else None)
    total_w = sum(w for w, _, _ in weights) or 1.0
    ctx = sum(w * (p + o / 2.0) for w, p, o in weights) / total_w
    mean_batch = max(overall.decode_batch.simulated or 1.0, 1.0)
    dec_inst = dep.pools[-1].instance
    dec_step = float(dec_inst.decode_step_s(mean_batch, ctx)) * 1000.0
    p50 = hist_quantile(gaps.hist, 0.5)
    p99 = hist_quantile(gaps.hist, 0.99)
    token_gaps = TokenGaps(None if p50 is None else p50 * 1000.0,
                           None if p99 is None else p99 * 1000.0, gaps.max_s * 1000.0, dec_step)
    return SimulationResult(
        scenario=scenario.name, mode=mode, plan=plan, gpus=dep.gpus, requests=feed.arrived,
        requests_planned=planned, sized=sized, seed=seed, router=sc.router,
        slo_percentile=sc.slo.percentile, ttft_slo_ms=sc.slo.ttft_ms,
        tpot_slo_ms=sc.slo.tpot_ms, phases=tuple(phases),
        overall=overall, reached=reached_all, stopped=counters.stopped,
        gpu_busy_share=min(counters.busy_gpu_s / (counters.gpus * sim_seconds), 1.0),
        kv_link_utilization=link,
        kv_cache=KvCache(kv.capacity_blocks * kv.block_tokens, kv.block_tokens,
                         kv.max_num_seqs, counters.preemptions),
        token_gaps=token_gaps, little=rec.figures(None).little, simulated_seconds=sim_seconds,
        steps=counters.steps, step_cache_misses=counters.step_cache_misses,
        clipped_requests=feed.clipped, source=source)
